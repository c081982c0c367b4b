"""The build cache: where it lives, and compiled objects keyed by what they are made of.

The cache is on by default, in the project's build/cache; `cache=DIR` (or AIT_BUILD_CACHE=DIR)
names one that checkouts and CI jobs share, `cache=off` turns it off.

SCons keys a cache entry by the bytes of the target's inputs, its command's signature and the
target's own path (so that the several outputs of one step get distinct entries). A compiled
object is the one output of its step and its command names no folder (commands.py), so its
entry is keyed without its path: a kernel whose source is byte-identical in two models, or in
two checkouts, is compiled once and retrieved after that.
"""

from __future__ import annotations

import os

from SCons.Util import hash_collect

OFF = ("off", "none", "")  # cache= values that turn the cache off


def cache_folder(arguments: dict, root: str) -> tuple:
    """(the cache folder, or '' when it is off; what chose it, for messages): `cache=`, else
    $AIT_BUILD_CACHE, else build/cache of the project."""
    if "cache" in arguments:
        value, given = str(arguments["cache"]).strip(), "cache="
    elif "AIT_BUILD_CACHE" in os.environ:
        value, given = os.environ["AIT_BUILD_CACHE"].strip(), "AIT_BUILD_CACHE"
    else:
        return os.path.join(root, "build", "cache"), "the default cache"
    return ("" if value.lower() in OFF else value), given


def keyed_by_content(target, source, env):
    """Emitter of the compile step: its object's cache entry leaves the object's path out."""
    for node in target:
        node.attributes.keyed_by_content = True
    return target, source


def content_signature(node) -> str | None:
    """The cache signature of a node keyed by content (SCons' own, less the node's path), or None
    for every other node."""
    if not getattr(node.attributes, "keyed_by_content", False):
        return None
    if not hasattr(node.attributes, "content_signature"):
        sigs = [child.get_cachedir_csig() for child in node.children()]
        node.attributes.content_signature = hash_collect(sigs + [node.get_contents_sig()])
    return node.attributes.content_signature
