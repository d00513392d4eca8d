"""Fixtures for the CLI suite: one real farm (`snakepit up`, every installed profile) for the
session, and a scripted fake MCP endpoint per test that wants one."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import clilib  # noqa: E402


@pytest.fixture(scope="session")
def farm():
    with clilib.Farm(slots=2) as running:
        yield running
    shutil.rmtree(running.dir, ignore_errors=True)


@pytest.fixture
def env(farm):
    """The environment that points the CLI at the farm, as a user's shell would."""
    return {"SNAKEPIT_STATE_DIR": farm.dir}


@pytest.fixture
def fake():
    endpoint = clilib.FakeMcp()
    yield endpoint
    endpoint.stop()
