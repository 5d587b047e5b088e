"""A case file's bytes -> plain data (dicts, lists, str, int, float, bool, None), within bounds.

YAML as PyYAML reads it lets a 740-line file expand to billions of nodes
(aliases), recurse until the interpreter gives up (deep nesting, an alias to
its own parent), silently keep the last of two equal keys and produce dates,
sets or bytes. Here the composer that turns parser events into nodes counts
and refuses instead, before anything is constructed:

- the file is at most MAX_BYTES and strict UTF-8;
- nesting is at most MAX_DEPTH collections deep;
- the document, with every alias expanded, has at most MAX_NODES nodes (so an
  alias bomb stops after a handful of events, and validation never sees more);
- an alias may not refer to a collection that contains it;
- mapping keys are plain scalars, each at most once per mapping;
- only JSON-like types (str, int, float, bool, null, seq, map) are produced.

Every refusal is a SourceProblem carrying the path of keys/indices where it
happened, so the loader can name the group and the field.
"""
from __future__ import annotations

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode
from yaml.resolver import Resolver

try:    # libyaml's event parser when PyYAML was built with it; the pure-Python one otherwise
    from yaml._yaml import CParser as _Parser

    def _parser_init(loader, text):
        _Parser.__init__(loader, text)
    _PARSER_BASES = (_Parser,)
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    def _parser_init(loader, text):
        Reader.__init__(loader, text)
        Scanner.__init__(loader)
        Parser.__init__(loader)
    _PARSER_BASES = (Reader, Scanner, Parser)

MAX_BYTES = 1 << 20        # the real case files are 10-30 KB
MAX_DEPTH = 32             # the real files nest 9 deep (groups.i.invalid.scenarios.j.tensors.t.shape.k)
MAX_NODES = 200_000        # after alias expansion; the real files have 1-3 thousand

_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map")}
_MERGE_TAG = _TAG + "merge"


class SourceProblem(Exception):
    """Why a file's text is refused: the message, the path (keys and indices) to the offending
    node, the line if known and the name of the group it lies in (None outside `groups`)."""

    def __init__(self, message: str, path=(), line: int | None = None, group: str | None = None):
        super().__init__(message)
        self.message, self.path, self.line, self.group = message, tuple(path), line, group


def _line(mark) -> int | None:
    return None if mark is None else mark.line + 1


def _scalar_text(node, limit=40) -> str:
    return repr(node.value if len(node.value) <= limit else node.value[:limit] + "...")


class _BoundedComposer(Composer):
    """PyYAML's composer with the bounds above; it keeps the path of keys to the node it composes."""

    def __init__(self):
        super().__init__()
        self._path: list = []          # keys / indices from the root to the node being composed
        self._parents: list = []       # the collections along that path (partly composed)
        self._open: set = set()        # anchors of the collections being composed (an alias to one = recursion)
        self._size: dict = {}          # id(node) -> node count with aliases expanded
        self._total = 0

    def _refuse(self, message, mark=None, path=None, node=None):
        path = self._path if path is None else path
        raise SourceProblem(message, path, _line(mark), self._group_name(path, node))

    def _group_name(self, path, node) -> str | None:
        """The `name` of groups[i] when the path lies in it and the name was composed already."""
        if len(path) < 2 or path[0] != "groups" or not isinstance(path[1], int):
            return None
        nodes = self._parents[2:3] or [node]
        group = nodes[0]
        if isinstance(group, MappingNode):
            for key, value in group.value:
                if isinstance(key, ScalarNode) and key.value == "name" and isinstance(value, ScalarNode):
                    return value.value
        return f"#{path[1]}"

    def _count(self, n: int, event):
        self._total += n
        if self._total > MAX_NODES:
            self._refuse(f"the document expands to more than {MAX_NODES} nodes (aliases included)", event.start_mark)

    def compose_node(self, parent, index):
        if parent is not None:
            self._path.append(index.value if isinstance(index, ScalarNode) else
                              len(parent.value) if index is None else index)
            self._parents.append(parent)
        try:
            return self._compose(parent, index)
        finally:
            if parent is not None:
                self._path.pop()
                self._parents.pop()

    def _compose(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self._open:
                self._refuse(f"alias *{event.anchor} refers to a collection that contains it", event.start_mark)
            node = super().compose_node(parent, index)       # raises on an undefined alias
            self._count(self._size[id(node)], event)
            return node
        if isinstance(event, (SequenceStartEvent, MappingStartEvent)) and len(self._path) >= MAX_DEPTH:
            self._refuse(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
        before = self._total
        node = super().compose_node(parent, index)
        self._count(1, event)
        if node.tag not in _ALLOWED_TAGS and node.tag != _MERGE_TAG:
            short = node.tag[len(_TAG):] if node.tag.startswith(_TAG) else node.tag
            self._refuse(f"a value of type {short!r} is not allowed here (quote it if it is text)", event.start_mark)
        self._size[id(node)] = self._total - before
        return node

    def compose_sequence_node(self, anchor):
        return self._composing(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        node = self._composing(super().compose_mapping_node, anchor)
        seen = {}
        for key, _ in node.value:
            if key.tag == _MERGE_TAG:
                continue
            if not isinstance(key, ScalarNode):
                self._refuse(f"a mapping key must be a plain value, not a {key.id}", key.start_mark, node=node)
            if key.value in seen:
                self._refuse(f"duplicate key {_scalar_text(key)} (first at line {seen[key.value]})",
                             key.start_mark, self._path + [key.value], node)
            seen[key.value] = _line(key.start_mark)
        return node

    def _composing(self, compose, anchor):
        """Compose a collection; while it is open, an alias to its anchor would make it contain itself."""
        if anchor is None:
            return compose(anchor)
        self._open.add(anchor)
        try:
            return compose(anchor)
        finally:
            self._open.discard(anchor)


class _Loader(_BoundedComposer, *_PARSER_BASES, SafeConstructor, Resolver):
    def __init__(self, text: str):
        _parser_init(self, text)
        _BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def decode(data: bytes) -> str:
    """Strict UTF-8 (a leading BOM is dropped); a bad byte is reported by line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SourceProblem(f"not UTF-8: byte 0x{data[e.start]:02x} at line {line}, column {column}",
                            line=line) from None


def parse(text: str):
    """The single YAML document in `text` as plain data. Raises SourceProblem for every refusal
    (bounds, duplicate keys, types) and yaml.YAMLError for a syntax error."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            # an explicit tag on text that is not of that type (!!int abc, !!bool maybe) or an
            # integer with more digits than Python converts
            raise SourceProblem(f"a value cannot be converted: {type(e).__name__}: {e}") from None
    finally:
        loader.dispose()


def read(path) -> str:
    """The text of a case file: at most MAX_BYTES, strict UTF-8. Raises SourceProblem or OSError."""
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SourceProblem(f"larger than {MAX_BYTES} bytes")
    return decode(data)
