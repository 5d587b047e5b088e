"""Fixtures shared by the harness's own tests."""
import os
from types import SimpleNamespace

import pytest

from harness.audit import traceability
from harness.acl import runtime
from tests import swenv, timing_room

# Under xdist these name this test process as a worker of the outer run, and every suite a test
# starts in a subprocess inherited them: its controller and case workers then looked like that
# worker of their own run (the hostile library's `worker=gw0` hit the controller's probe too, so
# a test passed on gw1 and failed on gw0). Subprocesses start as from a fresh shell; xdist itself
# keeps the worker's identity in config.workerinput, not in the environment.
for _name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _timing_room(request, tmp_path_factory):
    """Tests marked `timing` run alone (tests/timing_room.py). Under xdist the base temp directory
    is the worker's, its parent the session's."""
    shared = tmp_path_factory.getbasetemp().parent
    with timing_room.enter(shared, alone=request.node.get_closest_marker("timing") is not None):
        yield


@pytest.fixture(scope="session")
def loaded():
    """(OpSpec, [Case]) of every operator's case file, read once per test process."""
    return traceability.load_all()


@pytest.fixture(scope="session")
def swcann_root() -> str:
    if not (swenv.REPO / "swcann" / "build.py").is_file():
        pytest.skip("swcann/build.py absent: the software CANN is not written yet")
    from swcann.build import build
    root = str(build())
    swenv.require_in_process(root)     # one line when pytest was started without its set_env.sh
    return root


@pytest.fixture(scope="session")
def backend(swcann_root):
    """The aclnn backend on the software CANN (swenv.IN_PROCESS_FAMILY), found through
    ASCEND_HOME_PATH like a real install. One per test process: ACL initialises once, so every
    module's in-process tests share it."""
    from harness.backends.aclnn import AclnnBackend
    if runtime.current() is not None:
        pytest.skip("ACL was already initialised in this process by something else")
    # the variables matter only while ACL initialises; kept set for the session they leaked into
    # every subprocess later tests of this worker start (e.g. a run with another --soc)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASCEND_HOME_PATH", swcann_root)
        mp.setenv("SWCANN_SOC", swenv.IN_PROCESS_FAMILY)
        b = AclnnBackend(SimpleNamespace(family=swenv.IN_PROCESS_FAMILY, device=None, no_sw_fallback=False,
                                         deterministic=False, worker=None))
    yield b
    b.close()
