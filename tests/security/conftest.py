import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness import Executor, Listener  # noqa: E402


@pytest.fixture(scope="session")
def executor():
    ex = Executor(slots=2)
    yield ex
    ex.close()


@pytest.fixture(scope="session")
def ds_executor():
    ex = Executor(slots=2, profiles="python.data_science")
    yield ex
    ex.close()


@pytest.fixture(scope="session")
def executors(request):
    """profile → a running executor serving it (started on first use)."""
    return lambda profile: request.getfixturevalue(
        "executor" if profile == "python.basic" else "ds_executor")


@pytest.fixture(scope="session")
def listener():
    l = Listener()
    yield l
    l.close()
