"""Fixtures of the chaos suite: one farm with two brokers (`snakepit up --brokers 2`) whose
components the tests SIGKILL one at a time, a second front-end on it (the peer: any front-end
answers any request, so the load goes to both), and a tenant whose rate limit the load cannot
reach (while Redis is away the local limiter allows only half a tenant's rate, and this suite
measures what failures cost, not rate limits)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import chaoslib  # noqa: E402


@pytest.fixture(scope="module")
def farm():
    f = chaoslib.Farm(slots=2, extra=("--brokers", "2", "--profiles", "python.basic"))
    f.chaos_key = chaoslib.add_tenant(f.dir, "chaos")
    yield f
    f.stop()


@pytest.fixture(scope="module")
def peer(farm):
    p = chaoslib.Peer(farm)
    yield p
    p.stop()
