"""SHA-256 of files and the `<hex>  <name>` digest files beside build outputs (the format of
`sha256sum`, so `sha256sum -c lib<model>.so.sha256` checks one by hand)."""

from __future__ import annotations

import hashlib
import json
import os

from ait_build.files.read import read_bytes, sha256_file  # noqa: F401 (the digests' reader)


def digest_line(digest: str, name: str) -> str:
    return f"{digest}  {name}\n"


def record_digest(path: str) -> str:
    """Writes `<path>.sha256` (what a build records after linking a library); returns it."""
    digest_file = path + ".sha256"
    with open(digest_file, "w", encoding="ascii") as fh:
        fh.write(digest_line(sha256_file(path), os.path.basename(path)))
    return digest_file


def read_digest(path: str) -> str | None:
    """The hex digest a digest file records, or None when it is missing or malformed."""
    try:
        text = read_bytes(path, 200)[:200].decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    word = text.split()[0] if text.split() else ""
    return word if len(word) == 64 and all(c in "0123456789abcdef" for c in word) else None


# manifest fields the build_id does not cover: itself, and the compiler launcher, which the same
# outputs are built with or without (build/launcher.py)
OUTSIDE_BUILD_ID = ("build_id", "launcher")


def json_sha256(record: dict) -> str:
    """Hex digest of a JSON record in canonical form (sorted keys, no spaces): a manifest's
    build_id is this over every other field (but OUTSIDE_BUILD_ID), so an edit to any of them
    shows."""
    fields = {k: v for k, v in record.items() if k not in OUTSIDE_BUILD_ID}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=True).encode()).hexdigest()
