"""The value of SCons' `spec=` variable: spec paths joined with commas, where a comma or a
backslash inside a path is escaped with a backslash (`ait-build build` writes it so; a user
typing `scons spec=a.yaml,b.yaml` rarely needs to)."""

from __future__ import annotations


def split_paths(text: str) -> list:
    """`spec=` paths: commas separate them; `\\,` is a comma and `\\\\` a backslash inside one
    (join_paths writes them so)."""
    paths, current, chars = [], [], iter(text)
    for char in chars:
        if char == "\\":
            current.append(next(chars, "\\"))
        elif char == ",":
            paths.append("".join(current))
            current = []
        else:
            current.append(char)
    paths.append("".join(current))
    return [p for p in paths if p.strip()]


def join_paths(paths) -> str:
    """The `spec=` value that split_paths reads back as `paths`."""
    return ",".join(p.replace("\\", "\\\\").replace(",", "\\,") for p in paths)
