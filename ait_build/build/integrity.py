"""Build outputs checked against the hashes recorded when they were built.

SCons decides from the signatures of a target's inputs only. A build killed after it wrote new
outputs but before it recorded them (then the edit reverted), an output edited by hand, or a
corrupt CacheDir entry would otherwise count as up to date until build/ is deleted. So:

- `decide`: content signatures for inputs, as `Decider('content')`, and a target whose bytes
  differ from the signature SCons recorded for it is out of date;
- `VerifiedCache`: each cache entry gets `<entry>.sha256` when it is pushed; an entry whose bytes
  do not match it (or that has none) is a miss, and the file is built instead;
- `AitDigest`: `lib<model>.so.sha256`, the library's hash, which the runtime checks before it
  loads the library.
"""

from __future__ import annotations

import json
import os
import sys

import SCons.Action
import SCons.Builder
import SCons.CacheDir
import SCons.Errors
import SCons.Node
import SCons.Node.FS

from ait_build.build.cache import content_signature
from ait_build.codegen.digest import digest_line, read_digest, record_digest, sha256_file
from ait_build.files.read import read_bytes


def decide(dependency, target, prev_ni, repo_node=None) -> bool:
    """The build decider: an input changed, or the target's bytes are not the ones recorded."""
    changed = dependency.changed_content(target, prev_ni, repo_node)
    return changed or _drifted(target)


_DRIFTED: dict = {}  # target path -> answer, once per run: a target has many inputs to decide on


def _drifted(target) -> bool:
    """True when a built file exists but its content is not what SCons recorded for it."""
    if not isinstance(target, SCons.Node.FS.File) or not target.has_builder():
        return False
    if target.get_state() == SCons.Node.executed or not target.exists():
        return False  # built in this run, or missing (SCons rebuilds a missing file anyway)
    path = target.get_abspath()
    if path not in _DRIFTED and not os.path.isfile(path):
        _DRIFTED[path] = True  # a FIFO or a device where an output was: hashing it would block
    if path not in _DRIFTED:
        stored = getattr(target.get_stored_info().ninfo, "csig", None)
        # hashed from the file itself: SCons' get_csig may reuse the recorded value of old files
        _DRIFTED[path] = stored is not None and target.get_content_hash() != stored
    return _DRIFTED[path]


def use_cache(env, folder: str, readonly: bool) -> None:
    """The build's CacheDir at `folder` (absolute). SCons substitutes `$` in the path
    env.CacheDir() is given, and no escape keeps a `$(` through that, so the folder reaches the
    cache class as an attribute; SCons sees a placeholder."""
    base = ReadOnlyVerifiedCache if readonly else VerifiedCache
    env.CacheDir("ait-build-cache", type(base.__name__, (base,), {"folder": folder}))


class VerifiedCache(SCons.CacheDir.CacheDir):
    """A CacheDir whose entries carry the SHA-256 of the bytes the build pushed."""

    folder: str | None = None  # set by use_cache

    def __init__(self, path):
        folder = self.folder if path is not None and self.folder else path
        try:
            super().__init__(folder)
        except Exception as exc:  # unwritable, locked or corrupt: SCons would print its stack
            raise SCons.Errors.StopError(
                f"ait-build: the cache {folder} cannot be used ({type(exc).__name__}: "
                f"{str(exc).strip() or 'no reason given'}); give another with cache=DIR (ait-build "
                "build --cache DIR), or build without one: cache=off") from None

    def cachepath(self, node) -> tuple:
        """(folder, entry) as SCons places them, by the signature without the path for a
        compiled object (cache.py)."""
        signature = content_signature(node) if self.is_enabled() else None
        if signature is None:
            return super().cachepath(node)
        folder = os.path.join(self.path, signature[:self.config["prefix_len"]].upper())
        return folder, os.path.join(folder, signature)

    def retrieve(self, node) -> bool:
        if not self.is_enabled():
            return False
        _, entry = self.cachepath(node)
        if entry and os.path.exists(entry) and not _entry_matches(entry):
            sys.stderr.write(f"ait-build: cache entry for {node} does not match the hash recorded "
                             "when it was stored; building it instead\n")
            return False
        return super().retrieve(node)

    def push(self, node):
        result = super().push(node)
        if self.is_readonly() or not self.is_enabled():
            return result
        _, entry = self.cachepath(node)
        try:
            built = sha256_file(node.get_abspath())
            if not os.path.exists(entry + ".sha256") and sha256_file(entry) == built:
                tmp = f"{entry}.sha256.tmp{os.getpid()}"
                with open(tmp, "w", encoding="ascii") as fh:
                    fh.write(digest_line(built, os.path.basename(entry)))
                os.replace(tmp, entry + ".sha256")
        except OSError:
            pass  # an unverifiable entry is never used, so the build stays correct
        return result


class ReadOnlyVerifiedCache(VerifiedCache):
    """`cache_readonly=1`: fetch from the cache, never push (SCons' --cache-readonly is not
    settable from an SConstruct)."""

    def is_readonly(self) -> bool:
        return True

    def _readconfig(self, path: str) -> None:
        """The cache's config, read without SCons' lock (and without making the folder or the
        config when they are missing): the lock is a file created beside the config, which a
        read-only mount refuses, and a reader that never writes has nothing to guard."""
        try:
            config = json.loads(read_bytes(os.path.join(path, "config"), 1 << 16))
        except FileNotFoundError:
            config = {"prefix_len": SCons.CacheDir.CACHE_PREFIX_LEN}  # an empty cache: all misses
        except (OSError, ValueError) as exc:
            config = None
            sys.stderr.write(f"ait-build: cannot read the cache's config in {path} "
                             f"({getattr(exc, 'strerror', None) or exc}); building without it\n")
        if not isinstance(config, dict) or not isinstance(config.get("prefix_len"), int):
            self.path = None  # disabled: is_enabled() is False
            return
        self.config = config


def _entry_matches(entry: str) -> bool:
    recorded = read_digest(entry + ".sha256")
    try:
        return recorded is not None and sha256_file(entry) == recorded
    except OSError:
        return False


def write_digest(target, source, env):
    written = record_digest(source[0].get_abspath())
    return 0 if written == target[0].get_abspath() else f"wrote {written}, not {target[0]}"


def add_builders(env) -> None:
    """AitDigest: lib<model>.so -> lib<model>.so.sha256 (a silent step)."""
    env.Append(BUILDERS={"AitDigest": SCons.Builder.Builder(
        action=SCons.Action.Action(write_digest, None), single_source=True)})
