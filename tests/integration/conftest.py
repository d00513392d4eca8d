"""Shared fixtures: one real farm for the whole session (starting one takes a second or two)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from farm import Farm, McpHttp  # noqa: E402


@pytest.fixture(scope="session")
def farm():
    f = Farm(slots=2)
    yield f
    f.stop()


@pytest.fixture
def mcp(farm):
    client = McpHttp(farm.url, farm.api_key)
    client.initialize()
    return client
