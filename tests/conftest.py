"""Fixtures shared by the harness's own tests."""
import pytest

from harness import traceability


@pytest.fixture(scope="session")
def loaded():
    """(OpSpec, [Case]) of every operator's case file, read once per test process."""
    return traceability.load_all()
