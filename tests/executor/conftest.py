import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from harness import Executor  # noqa: E402


@pytest.fixture(scope="module")
def executor():
    ex = Executor(slots=2)
    yield ex
    ex.close()
