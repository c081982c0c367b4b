"""YAML loading that keeps source positions, rejects duplicate keys and guards against abuse.

We read the parser's event stream (libyaml's C parser when PyYAML has it) and build plain dicts
and lists ourselves, with an explicit stack instead of recursion, so every mapping and list
remembers where it and each of its entries came from, nesting depth is checked before it can
overflow anything, and an alias is counted at its expanded size the moment it is used: an alias
bomb fails at its first oversized alias instead of eating time and memory.
"""

from __future__ import annotations

import errno
import re

import yaml

from ait_build.errors import Location, SpecError
from ait_build.files.read import NotRegularFile, read_bytes

try:  # the C parser is ~20x faster; a large file must not feel like a hang
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES = 100_000  # YAML nodes after alias expansion; real specs use a few thousand
MAX_DEPTH = 64
MAX_INT_CHARS = 100  # Python refuses to print an int of over 4300 digits; no spec needs 20

_STR, _MERGE = "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"
_SCALAR_TAGS = {_INT, "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                "tag:yaml.org,2002:null"}
_TEXT_TAGS = {_STR, "tag:yaml.org,2002:timestamp"}  # dates stay text: specs never need datetimes
_COLLECTION_TAGS = {None, "!", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}


class YMap(dict):
    """A mapping from a YAML file; `loc`, `key_loc[key]` and `value_loc[key]` give positions."""

    loc: Location
    key_loc: dict
    value_loc: dict

    def where(self, key) -> Location:
        return self.value_loc.get(key, self.loc)


class YList(list):
    """A sequence from a YAML file; `loc` and `item_loc[i]` give positions."""

    loc: Location
    item_loc: list

    def where(self, index: int) -> Location:
        return self.item_loc[index] if 0 <= index < len(self.item_loc) else self.loc


def type_name(value) -> str:
    """'an integer', 'a list', ... for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    for kind, name in ((int, "an integer"), (float, "a number"), (str, "a string"),
                       (YMap, "a mapping"), (YList, "a list")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


_EXPONENT_NUMBER = re.compile(r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))[eE]([-+]?)([0-9]+)")


def number_hint(value) -> str:
    """For text where a number belongs: `1e-5` and `1.0e5` are numbers to JSON and YAML 1.2, but
    text to the YAML 1.1 that PyYAML reads, which wants a '.' and a signed exponent."""
    m = _EXPONENT_NUMBER.fullmatch(value) if isinstance(value, str) else None
    if not m:
        return ""
    number = (m[1] if "." in m[1] else m[1] + ".0") + f"e{m[2] or '+'}{m[3]}"
    return f"; YAML reads {value} as text: write {number}" if number != value else ""


def plain(value):
    """YMap/YList (at any depth) as plain dicts and lists: for JSON, yaml.safe_dump, kwargs."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def ylist(items, loc: Location) -> YList:
    """A YList whose items all point at `loc` (for a scalar written where a list is allowed)."""
    out = YList(items)
    out.loc, out.item_loc = loc, [loc] * len(out)
    return out


def located(path: str, mark) -> Location:
    return Location(path, mark.line + 1, mark.column + 1)


def where(container, key) -> Location | None:
    """Position of an entry of a YMap/YList (or the container's own, if unknown)."""
    if isinstance(container, (YMap, YList)):
        return container.where(key)
    return getattr(container, "loc", None)


_NOTHING = object()  # no mapping key pending; no document read yet


class _Frame:
    """A mapping or list being built, with its expanded size so far."""

    __slots__ = ("value", "loc", "size", "anchor", "key", "key_loc")

    def __init__(self, value, loc, anchor):
        self.value, self.loc, self.anchor = value, loc, anchor
        self.size, self.key, self.key_loc = 1, _NOTHING, None


class _Builder:
    """Turns parser events into YMap/YList/scalars; one instance per file."""

    def __init__(self, path: str):
        self.path = path
        self.total = 0
        self.anchors: dict = {}  # name -> (value, expanded size)
        self.stack: list = []
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()

    def run(self, loader):
        root, root_loc, doc_loc = _NOTHING, None, None
        while True:
            event = loader.get_event()
            if isinstance(event, yaml.StreamEndEvent):
                return root, root_loc
            if isinstance(event, yaml.DocumentStartEvent):
                doc_loc = located(self.path, event.start_mark)
            elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.CollectionStartEvent)):
                if not self.stack and root is not _NOTHING and not _empty(event):
                    raise SpecError("file holds more than one YAML document; put one spec per file",
                                    doc_loc)
                result = self.node(event)
                if result is not None and not self.stack and not _empty(event):
                    root, root_loc = result[0], located(self.path, event.start_mark)
            elif isinstance(event, yaml.CollectionEndEvent):
                frame = self.stack.pop()
                if frame.anchor is not None:
                    self.anchors[frame.anchor] = (frame.value, frame.size)
                if self.stack:
                    self.attach(frame.value, frame.loc, frame.size)
                else:
                    root, root_loc = frame.value, frame.loc

    def node(self, event):
        """Handle a node event; returns (value,) for a finished root node."""
        loc = located(self.path, event.start_mark)
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                open_anchors = {f.anchor for f in self.stack}
                name = event.anchor
                raise SpecError(f"alias '*{name}' refers to a node that contains it"
                                if name in open_anchors
                                else f"alias '*{name}' has no anchor '&{name}' before it", loc)
            value, size = self.anchors[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            value, size = self.scalar(event, loc), 1
            if event.anchor is not None:
                self.anchors[event.anchor] = (value, 1)
        else:
            if event.tag not in _COLLECTION_TAGS:
                raise SpecError(f"unsupported YAML tag '{event.tag}'", loc)
            if len(self.stack) >= MAX_DEPTH:
                raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", loc)
            value = YMap() if isinstance(event, yaml.MappingStartEvent) else YList()
            value.loc = loc
            if isinstance(value, YMap):
                value.key_loc, value.value_loc = {}, {}
            else:
                value.item_loc = []
            self.count(1, loc)
            self.stack.append(_Frame(value, loc, event.anchor))
            return None
        if not self.stack:
            self.count(size, loc)
            return (value,)
        self.attach(value, loc, size, counted=False)
        return None

    def count(self, size, loc):
        self.total += size
        if self.total > MAX_NODES:
            raise SpecError(f"alias expands the document to more than {MAX_NODES} YAML nodes (an alias "
                            "counts at its expanded size; is this a 'billion laughs' document?)"
                            if size > 1 else f"document has more than {MAX_NODES} YAML nodes", loc)

    def attach(self, value, loc, size, counted=True):
        """Add a finished node to the collection being built."""
        frame = self.stack[-1]
        if not counted:
            self.count(size, loc)
        frame.size += size
        parent = frame.value
        if isinstance(parent, YList):
            parent.append(value)
            parent.item_loc.append(loc)
        elif frame.key is _NOTHING:  # this node is a key
            if isinstance(value, (YMap, YList)):
                raise SpecError("a mapping key must be a plain value, not a mapping or a list", loc)
            if value in parent:
                first = parent.key_loc[value]
                raise SpecError(f"duplicate key '{value}' (first defined at line {first.line})", loc)
            frame.key, frame.key_loc = value, loc
        else:
            parent[frame.key] = value
            parent.key_loc[frame.key] = frame.key_loc
            parent.value_loc[frame.key] = loc
            frame.key = _NOTHING

    def scalar(self, event, loc):
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _MERGE and self.stack and isinstance(self.stack[-1].value, YMap) \
                and self.stack[-1].key is _NOTHING:
            raise SpecError("YAML merge keys ('<<') are not supported; use blocks instead", loc)
        if tag in _TEXT_TAGS or tag == _MERGE:
            return event.value
        if tag not in _SCALAR_TAGS:
            raise SpecError(f"unsupported YAML tag '{tag}'", loc)
        value = event.value
        if tag == _INT and len(value) > MAX_INT_CHARS:
            raise SpecError(f"integer too large: written with {len(value)} characters, the limit is "
                            f"{MAX_INT_CHARS}", loc)
        if tag == _INT and value.isdigit() and (value[0] != "0" or len(value) == 1):  # fast path
            return int(value)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return self.constructor.yaml_constructors[tag](self.constructor, node)
        except (yaml.YAMLError, ValueError) as exc:
            raise SpecError(f"bad {tag.rsplit(':', 1)[-1]} value '{event.value}': "
                            f"{getattr(exc, 'problem', exc)}", loc) from None
        except (KeyError, IndexError):  # PyYAML's constructors index the text: `!!bool maybe`, `!!int ""`
            raise SpecError(f"bad {tag.rsplit(':', 1)[-1]} value '{event.value}'", loc) from None


def _empty(event) -> bool:
    """An empty document ('---' with nothing after it) parses as an empty plain scalar."""
    return isinstance(event, yaml.ScalarEvent) and event.value == "" and event.implicit[0] \
        and event.tag is None


def _syntax_error(exc: yaml.MarkedYAMLError, text: str, path: str) -> SpecError:
    """libyaml's messages, with the offending character named and the opening bracket, quote or
    mapping that the problem belongs to."""
    mark = exc.problem_mark or exc.context_mark
    loc = located(path, mark) if mark else Location(path, 1, 1)
    problem = exc.problem or exc.context or "invalid YAML"
    lines = text.splitlines()
    if "cannot start any token" in problem and mark is not None:
        char = lines[mark.line][mark.column:mark.column + 1] if mark.line < len(lines) else ""
        if char == "\t":
            return SpecError("YAML syntax error: a tab character; YAML indentation must use spaces",
                             loc)
        if char:
            problem = f"found character {char!r} that cannot start any token (quote the value)"
    elif problem.startswith("mapping values are not allowed"):
        problem += " (check the indentation, or quote a value that holds ': ')"
    context = (exc.context or "").replace("while scanning ", "").replace("while parsing ", "")
    context = context[2:] if context.startswith("a ") else context
    opened = exc.context_mark
    if exc.problem and context and opened is not None and _pos(opened) != _pos(mark):
        at = f"line {opened.line + 1}, column {opened.column + 1}"
        if ("flow" in context or "quoted" in context) and _pos(mark)[0] >= len(lines):
            return SpecError(f"YAML syntax error: this {context} is never closed", located(path, opened))
        if context.startswith("block"):
            problem += f"; check the indentation against the {context} at {at}"
        else:
            problem += f" (in the {context} that starts at {at})"
    return SpecError(f"YAML syntax error: {problem}", loc)


def _pos(mark) -> tuple:
    return (mark.line, mark.column) if mark is not None else (-1, -1)


def _reader_error(exc: yaml.reader.ReaderError, text: str, path: str) -> SpecError:
    before = text[:exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    return SpecError(f"character U+{exc.character:04X} is not allowed in YAML",
                     Location(path, line, col))


def parse_yaml(text: str, path: str):
    """Parse one YAML document, a mapping, from `text` into YMap/YList/scalars with positions."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise SpecError(f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                        Location(path, 1, 1))
    loader = None
    try:
        loader = _Loader(text)
        root, root_loc = _Builder(path).run(loader)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, text, path) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, path) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {exc}", Location(path, 1, 1)) from None
    finally:
        if loader is not None:
            loader.dispose()
    if root is _NOTHING:
        raise SpecError("file is empty (expected a mapping with 'apiVersion' and 'kind')",
                        Location(path, 1, 1))
    if not isinstance(root, YMap):
        raise SpecError("a spec file must be a mapping with 'apiVersion' and 'kind', got "
                        + type_name(root), root_loc)
    return root


def load_yaml(path: str, shown_as: str | None = None):
    """Read and parse a YAML file; errors name the file as `shown_as` (default: the given path)."""
    shown = shown_as or path
    try:
        raw = read_bytes(path, MAX_FILE_BYTES)
    except NotRegularFile as exc:
        what = "is a directory" if exc.errno == errno.EISDIR else "is not a regular file"
        raise SpecError(f"{what}, expected a YAML file", Location(shown)) from None
    except FileNotFoundError:
        raise SpecError("no such file", Location(shown)) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", Location(shown)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                        Location(shown, 1, 1))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[:exc.start]
        line, col = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
        raise SpecError(f"file is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                        Location(shown, line, col)) from None
    return parse_yaml(text, shown)
