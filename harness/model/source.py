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
- only JSON-like types (str, int, float, bool, null, seq, map) are produced;
- a scalar YAML 1.1 and YAML 1.2 read differently (`011`, `1:30`, `yes`, `1e3`, the merge key
  `<<`) is refused with both readings, and integers are plain decimal (readings.py says why).

Every refusal is a SourceProblem carrying the path of keys/indices where it
happened, so the loader can name the group and the field.
"""
from __future__ import annotations

import os

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (AliasEvent, MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent,
                         StreamEndEvent)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from . import readings

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
MAX_NODES = 30_000         # after alias expansion; the real files have 1.6-3.8 thousand

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


class _BoundedComposer:
    """Parser events -> YAML nodes, like PyYAML's Composer, but counting and refusing as it goes.

    It keeps the path of keys and indices to the node being composed (for the error) and,
    per anchor, the number of nodes the anchored node stands for once aliases are expanded.
    """

    def __init__(self):
        self.anchors: dict = {}        # anchor -> node
        self._sizes: dict = {}         # anchor -> node count with aliases expanded
        self._open: set = set()        # anchors of collections still being composed
        self._path: list = []          # keys / indices from the root to the node being composed
        self._parents: list = []       # the collections along that path (partly composed)
        self._total = 0

    def get_single_node(self):
        self.get_event()                                        # stream start
        node = None
        if not self.check_event(StreamEndEvent):
            self.get_event()                                    # document start
            node = self._node()
            self.get_event()                                    # document end
        if not self.check_event(StreamEndEvent):
            self._refuse("more than one YAML document in the file", self.peek_event().start_mark)
        self.get_event()
        return node

    # ------------------------------------------------------------ errors

    def _refuse(self, message, mark=None):
        raise SourceProblem(message, self._path, _line(mark), self._group_name())

    def syntax_problem(self, e: yaml.YAMLError) -> SourceProblem:
        """A parser or constructor error, placed like a refusal (group and field where the
        composer stood; none once the document is composed). libyaml 0.2.6+ (PyYAML 6.0.4's wheels) has a nesting limit of its own
        that it hits while scanning ahead of the composer: that is reported as our depth bound."""
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if "nesting depth" in problem:
            return SourceProblem(f"nested more than {MAX_DEPTH} levels deep", self._path, _line(mark),
                                 self._group_name())
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return SourceProblem(f"not valid YAML{where}: {problem}", self._path, None, self._group_name())

    def _group_name(self) -> str | None:
        """The `name` of groups[i] when the path lies in it and the name was composed already."""
        path = self._path
        if len(path) < 2 or path[0] != "groups" or not isinstance(path[1], int):
            return None
        group = (self._parents[2:3] or [None])[0]
        if isinstance(group, MappingNode):
            for key, value in group.value:
                if isinstance(key, ScalarNode) and key.value == "name" and isinstance(value, ScalarNode):
                    return value.value
        return f"#{path[1]}"

    def _add(self, n: int, event):
        self._total += n
        if self._total > MAX_NODES:
            self._refuse(f"the document expands to more than {MAX_NODES} nodes (aliases included)",
                         event.start_mark)

    # ------------------------------------------------------------ composing

    def _node(self):
        event = self.get_event()
        anchor = event.anchor
        if isinstance(event, AliasEvent):
            if anchor in self._open:
                self._refuse(f"alias *{anchor} refers to a collection that contains it", event.start_mark)
            if anchor not in self.anchors:
                self._refuse(f"alias *{anchor} is not defined before its use", event.start_mark)
            self._add(self._sizes[anchor], event)
            return self.anchors[anchor]
        before = self._total
        self._add(1, event)
        if isinstance(event, ScalarEvent):
            explicit = event.tag not in (None, "!")
            tag = event.tag if explicit else self.resolve(ScalarNode, event.value, event.implicit)
            self._allowed(tag, event)
            if explicit or event.implicit[0]:           # a tag or a plain scalar: resolved, not quoted text
                why = readings.problem(self, tag, event.value, explicit)
                if why:
                    self._refuse(why, event.start_mark)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        else:
            if len(self._path) >= MAX_DEPTH:
                self._refuse(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
            if anchor is not None:
                self._open.add(anchor)
            mapping = isinstance(event, MappingStartEvent)
            kind = MappingNode if mapping else SequenceNode
            tag = event.tag if event.tag not in (None, "!") else self.resolve(kind, None, event.implicit)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            self._parents.append(node)
            (self._items if mapping else self._elements)(node)
            self._parents.pop()
            node.end_mark = self.get_event().end_mark               # collection end
            self._open.discard(anchor)
            self._allowed(tag, event)
        if anchor is not None:
            self.anchors[anchor], self._sizes[anchor] = node, self._total - before
        return node

    def _allowed(self, tag, event):
        """JSON-like types only. A merge key passes here: readings.py refuses it with both readings."""
        if tag not in _ALLOWED_TAGS and tag != _MERGE_TAG:
            short = tag[len(_TAG):] if tag.startswith(_TAG) else tag
            self._refuse(f"a value of type {short!r} is not allowed here (quote it if it is text)",
                         event.start_mark)

    def _elements(self, node):
        while not self.check_event(SequenceEndEvent):
            self._path.append(len(node.value))
            node.value.append(self._node())
            self._path.pop()

    def _items(self, node):
        first_line = {}
        while not self.check_event(MappingEndEvent):
            key = self._node()                      # at the mapping's path: a refused key names its mapping
            self._path.append(key.value if isinstance(key, ScalarNode) else len(node.value))
            if not isinstance(key, ScalarNode):
                self._refuse(f"a mapping key must be a plain value, not a {key.id}", key.start_mark)
            if key.value in first_line:
                self._refuse(f"duplicate key {_scalar_text(key)} (first at line {first_line[key.value]})",
                             key.start_mark)
            first_line[key.value] = _line(key.start_mark)
            node.value.append((key, self._node()))
            self._path.pop()


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
        raise SourceProblem(f"not UTF-8: byte 0x{data[e.start]:02x} at line {line}, column {column}") from None


def parse(text: str):
    """The single YAML document in `text` as plain data. Raises SourceProblem for every refusal
    (bounds, duplicate keys, types, syntax errors)."""
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
    except yaml.YAMLError as e:     # composing or constructing (a bad merge): placed where the composer stood
        raise loader.syntax_problem(e) from None
    finally:
        loader.dispose()


def read(path) -> str:
    """The text of a case file: at most MAX_BYTES, strict UTF-8. Raises SourceProblem or OSError."""
    if os.path.exists(path) and not os.path.isfile(path):     # a FIFO or a device would block or never end
        raise SourceProblem("not a regular file")
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SourceProblem(f"larger than {MAX_BYTES} bytes")
    return decode(data)
