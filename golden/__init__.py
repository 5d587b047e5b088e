"""Golden models for the five aclnn pooling-backward operators.

`load(name)` returns the module `golden.<name>`; every op module exposes
OUTPUT, prepare(draw, p), golden(inputs, attrs) and torch_op(inputs, attrs).
"""
import functools
import importlib
import pkgutil


@functools.lru_cache(maxsize=None)
def _scan():
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


def available():
    """Names of the op modules in this package (helpers start with '_'). The directory is read
    once per process: load() is called for every case, and a scan cost ~0.5 ms."""
    return list(_scan())


def load(name):
    names = available()
    if name not in names:
        raise LookupError(f"unknown golden {name!r}; available goldens: {', '.join(names)}")
    return importlib.import_module(f"{__name__}.{name}")
