"""The two places the plugin reaches into pytest's and pytest-xdist's private API, and nowhere else.

* xdist's queue of the items its controller has dealt a worker (`WorkerInteractor.torun`,
  pytest-xdist 3.x): read only as a hint of which cases come next, so the case worker can start them
  ahead. Without it a worker knows only `nextitem`.
* pytest's junitxml plugin object (`_pytest.junitxml.xml_key`): the run's identity as global
  properties of a `--junitxml` file. The public `record_testsuite_property` is a fixture, which
  case items do not use.

Both degrade to doing nothing when the private API is not there; `problems()` says what is missing,
and tests/test_plugin_private_api.py fails loudly on it, so an upgrade that changes either is seen
in the project's own tests rather than as a slower run or a junit file without identity.
"""
from __future__ import annotations


def _interactor(config):
    return next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)


def xdist_queue(config):
    """xdist's queue of item indices dealt to this worker, or None where it cannot be read."""
    queue = getattr(_interactor(config), "torun", None)
    return queue if callable(getattr(queue, "lock", None)) else None


def dealt(queue, n: int) -> list[int]:
    """Up to `n` indices waiting in xdist's queue after `nextitem`. Any other layout of that queue
    gives [] (ahead = `nextitem` alone). A case sent ahead and then stolen back by the controller
    (--dist worksteal) runs twice, once for nothing."""
    try:
        with queue.lock() as pending:
            head = [pending[i] for i in range(min(n, len(pending)))]
    except Exception:
        return []
    return [i for i in head if isinstance(i, int)]


def add_junit_properties(config, properties: dict) -> bool:
    """The run's identity as global properties of pytest's own --junitxml file; False when there is
    no such file or pytest's internals moved."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return False
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return False
    for k, v in properties.items():
        xml.add_global_property(k, v)
    return True


def problems() -> list[str]:
    """What of the private API this module relies on is missing in the installed versions."""
    out = []
    try:
        from _pytest.junitxml import LogXML, xml_key  # noqa: F401
        if not hasattr(LogXML, "add_global_property"):
            out.append("_pytest.junitxml.LogXML.add_global_property is gone")
    except ImportError as e:
        out.append(f"_pytest.junitxml: {e}")
    try:
        from xdist.remote import WorkerInteractor
        import inspect
        if "torun" not in inspect.getsource(WorkerInteractor):
            out.append("xdist.remote.WorkerInteractor keeps no `torun` queue")
    except (ImportError, OSError, TypeError) as e:
        out.append(f"xdist.remote.WorkerInteractor: {e}")
    return out
