"""Reading a baseline file, bounded: YAML (only true/false are booleans, no key twice, nesting and
alias expansion capped) or JSON (a perf baseline's samples read fast); every refusal one
BaselineError line naming the file (baseline.py checks what the document says)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from ..core.errors import HarnessConfigError
from ..core.text import clipped

MAX_DEPTH = 32              # a perf baseline nests 4 deep (cases.<id>.samples_ms[i])
MAX_NODES = 250_000         # YAML nodes with aliases expanded (JSON has none: its size is the file's)
MAX_ERROR = 1000


class _Refused(yaml.MarkedYAMLError):           # said as it is, not as "not valid YAML"
    pass


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, except that only true/false are booleans: YAML 1.1's yes/no/on/off
    stay text (as YAML 1.2 reads them), so that `benchmark: no` is refused by the schema as the
    case files refuse `ceilMode: no`, instead of meaning false to PyYAML and text to other tools.
    Bounded (MAX_DEPTH, MAX_NODES; an alias inside its own anchor), and no key given twice."""

    def __init__(self, text):
        super().__init__(text)
        self._depth, self._nodes, self._sizes = 0, 0, {}      # _sizes: anchor -> nodes it stands for

    def compose_node(self, parent, index):
        event = self.peek_event()
        alias = isinstance(event, yaml.AliasEvent)
        if alias and event.anchor in self.anchors and event.anchor not in self._sizes:
            raise _Refused(None, None, f"alias *{event.anchor} is inside the collection it names", event.start_mark)
        before, self._depth = self._nodes, self._depth + (not alias)
        self._nodes += self._sizes.get(event.anchor, 0) if alias else 1
        if self._depth > MAX_DEPTH or self._nodes > MAX_NODES:
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep" if self._depth > MAX_DEPTH else
                           f"the document expands to more than {MAX_NODES} nodes (aliases included)", event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= not alias
        if not alias and event.anchor is not None:
            self._sizes[event.anchor] = self._nodes - before
        return node

    def compose_mapping_node(self, anchor):          # as written: before a merge key adds its keys
        node = super().compose_mapping_node(anchor)
        keys = [k for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        if len({k.value for k in keys}) < len(keys):
            twice = next(k for i, k in enumerate(keys) if k.value in {j.value for j in keys[:i]})
            raise _Refused(None, None, f"duplicate key {twice.value!r}", twice.start_mark)
        return node


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


class BaselineError(HarnessConfigError):
    """A malformed or inapplicable baseline. str() is one line naming the file and field, at most
    MAX_ERROR characters (a schema message quotes the whole wrong value: a list of a million samples)."""

    def __init__(self, message: str):
        super().__init__(clipped(message, MAX_ERROR))


def read_document(path: Path) -> dict:
    """A baseline file's document: YAML, or JSON (a perf baseline; JSON is YAML too, but the json
    module reads megabytes of samples fifty times faster)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror}") from None
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: not UTF-8 text") from None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text, object_pairs_hook=_unique_keys)
        except RecursionError as e:                # past the json module's own bound
            doc = e
        except KeyError as e:                      # _unique_keys
            raise BaselineError(f"{path}: duplicate key {e.args[0]!r}") from None
        except json.JSONDecodeError:
            doc = None                 # a YAML flow mapping: YAML says what is wrong with it
        if isinstance(doc, RecursionError) or (doc is not None and _deeper_than(doc, MAX_DEPTH)):
            raise BaselineError(f"{path}: nested more than {MAX_DEPTH} levels deep")
        if doc is not None:
            return doc
    try:
        return yaml.load(text, Loader=_Loader)       # noqa: S506 - a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        what = getattr(e, "problem", None) or str(e).splitlines()[0]     # a reader error has no `problem`
        raise BaselineError(f"{path}:{where} {'' if isinstance(e, _Refused) else 'not valid YAML: '}{what}") from None


def _unique_keys(pairs: list) -> dict:
    doc = dict(pairs)
    if len(doc) < len(pairs):
        raise KeyError(next(k for i, (k, _) in enumerate(pairs) if k in dict(pairs[:i])))
    return doc


def _deeper_than(doc, limit: int) -> bool:
    """Whether collections nest in `doc` more than `limit` deep (level by level: no recursion)."""
    level = [doc]
    for _ in range(limit):
        level = [v for c in level if isinstance(c, (dict, list)) for v in (c.values() if isinstance(c, dict) else c)]
    return any(isinstance(c, (dict, list)) for c in level)
