"""Which test functions read one of the platform's sets (its families, its dtypes).

Found by reading the tests, not by a marker someone must remember: a test reads the set when it
names it (a name imported from one of the modules that hold it, or `module.NAME` through such a
module), through a module-level name or helper computed from it, or through a parameter of that name.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Set:
    sources: dict[str, frozenset[str]]      # module -> the names it holds the set under
    attributes: dict[str, frozenset[str]]   # how a test names such a module -> the same names

    def _read_by(self, node: ast.AST, dependent: set[str]) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in dependent:
                return True
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                    and n.attr in self.attributes.get(n.value.id, ()):
                return True
        return False

    def readers(self, path: Path, root: Path) -> list[str]:
        """The node ids (relative to `root`) of the test functions of `path` that read the set."""
        tree = ast.parse(path.read_text(), str(path))
        dependent = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                     and node.module in self.sources for alias in node.names
                     if alias.name in self.sources[node.module]}
        changed = True
        while changed:                           # module-level names and helpers built on a dependent one
            changed = False
            for node in tree.body:
                names = []
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("test"):
                    names = [node.name]
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                fresh = [n for n in names if n not in dependent]
                if fresh and self._read_by(node, dependent):
                    dependent.update(fresh)
                    changed = True
        found = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                params = {a.arg for a in node.args.args}
                if self._read_by(node, dependent) or params & dependent:
                    found.append(f"{path.relative_to(root).as_posix()}::{node.name}")
        return found


def _set(sources: dict[str, tuple[str, ...]], attributes: dict[str, tuple[str, ...]]) -> Set:
    return Set({k: frozenset(v) for k, v in sources.items()}, {k: frozenset(v) for k, v in attributes.items()})


# the platform file itself (PLATFORM_FILE) holds both sets: a test that reads it reads them
FAMILIES = _set({"harness.core.families": ("FAMILIES",), "platforms": ("FAMILIES", "PLATFORM_FILE"),
                 "harness.audit.traceability": ("REQUIRED_FAMILIES",), "golden._opinfo": ("FAMILIES",)},
                {"families": ("FAMILIES",), "platforms": ("FAMILIES", "PLATFORM_FILE"),
                 "traceability": ("REQUIRED_FAMILIES",), "_opinfo": ("FAMILIES",)})
DTYPES = _set({"harness.core.dtypes": ("ALL", "BY_NAME"), "platforms": ("DTYPES", "DTYPE", "PLATFORM_FILE")},
              {"dtypes": ("ALL", "BY_NAME"), "platforms": ("DTYPES", "DTYPE", "PLATFORM_FILE")})
