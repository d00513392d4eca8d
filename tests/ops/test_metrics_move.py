"""Counters and histograms move as the known mix says they must (conftest.py): every
component's /metrics read right before and right after it, nothing else running on the farm.
Exact for counts; for durations only what the job's own limits imply (a 1 s timeout took at
least about a second of wall clock) — never how fast anything was."""
import time

import pytest

import opslib
from opsfarm import CLI_MIX, MCP_MIX, STATUS_BY_EXIT, scrape_all

N_CLI, N_MCP = len(CLI_MIX), len(MCP_MIX)


def allowed_calls(mix):
    """The rate-limited tenant's calls that got through (each ran `1`: ok)."""
    return len(mix["limited"]) - sum(mix["limited"])


def n_jobs(mix):
    return N_CLI + N_MCP + allowed_calls(mix)


def expected_by_status(mix):
    want = {"ok": allowed_calls(mix)}
    for _, code in CLI_MIX:
        want[STATUS_BY_EXIT[code]] = want.get(STATUS_BY_EXIT[code], 0) + 1
    for _, status in MCP_MIX:
        want[status] = want.get(status, 0) + 1
    return want


@pytest.fixture(scope="module")
def delta(mix):
    """delta[component](name, **labels) = value after - value before."""
    parsed = {c: (opslib.parse(mix["before"][c]), opslib.parse(mix["after"][c])) for c in mix["after"]}

    def make(comp):
        before, after = parsed[comp]
        return lambda name, **labels: opslib.value(after, name, **labels) - opslib.value(before, name, **labels)
    return {c: make(c) for c in parsed}


def test_executor_counts_each_job_by_its_status(delta, mix):
    d = delta["executor"]
    for status, n in expected_by_status(mix).items():
        assert d("snakepit_executor_jobs_total", status=status) == n, status
    assert d("snakepit_executor_jobs_total") == n_jobs(mix)


def test_executor_counts_sandbox_kills_by_the_event_stopped(delta):
    d = delta["executor"]
    assert d("snakepit_executor_sandbox_kills_total") == 2
    assert d("snakepit_executor_sandbox_kills_total", syscall="os.system") == 2


def test_executor_histograms_count_every_job_and_see_the_timeouts(delta, mix, farm):
    d = delta["executor"]
    n = d("snakepit_executor_jobs_total")
    for hist in ("snakepit_executor_job_wall_seconds", "snakepit_executor_job_cpu_seconds",
                 "snakepit_executor_job_max_rss_bytes"):
        assert d(hist + "_count") == n, hist
        assert d(hist + "_bucket", le="+Inf") == n, hist
        assert d(hist + "_sum") > 0, hist
    # two jobs ran into a 1 s wall-clock limit: they are in no bucket below half a second
    assert d("snakepit_executor_job_wall_seconds_sum") >= 2 * 0.9
    assert d("snakepit_executor_job_wall_seconds_bucket", le="0.5") <= n - 2
    # a fresh child per job: each job takes a pooled child, and the pool is refilled by a fork
    # just after (it may wait a moment while another ready child remains), so the forks catch up
    # with the jobs by themselves, if not always by the time "after" was read
    before = opslib.parse(mix["before"]["executor"])
    forks = 0
    for _ in range(50):
        after = opslib.parse(scrape_all(farm.ready)["executor"])
        forks = (opslib.value(after, "snakepit_executor_forks_total")
                 - opslib.value(before, "snakepit_executor_forks_total"))
        if forks >= n:
            break
        time.sleep(0.1)
    assert forks >= n, (forks, n)


def test_executor_histogram_buckets_are_cumulative(mix):
    samples = opslib.parse(mix["after"]["executor"])
    for hist in ("snakepit_executor_job_wall_seconds", "snakepit_executor_job_cpu_seconds"):
        # one series per profile the node serves: each must be cumulative on its own
        profiles = {dict(ls).get("profile") for (n, ls), _ in samples.items() if n == hist + "_bucket"}
        assert profiles, hist
        for profile in profiles:
            buckets = sorted(((float(dict(ls)["le"]), v) for (n, ls), v in samples.items()
                              if n == hist + "_bucket" and dict(ls).get("profile") == profile),
                             key=lambda b: b[0])
            counts = [v for _, v in buckets]
            assert counts == sorted(counts), (hist, profile)
            assert counts[-1] == opslib.value(samples, hist + "_count", profile=profile)


def test_broker_counts_every_job_once(delta, mix):
    d = delta["broker"]
    n = n_jobs(mix)
    assert d("snakepit_broker_jobs_submitted_total") == n
    assert d("snakepit_broker_jobs_dispatched_total") == n
    assert d("snakepit_broker_jobs_completed_total") == n
    assert d("snakepit_broker_queue_wait_seconds_count") == n
    assert d("snakepit_broker_queue_wait_seconds_bucket", le="+Inf") == n
    for nothing in ("snakepit_broker_jobs_lost_total", "snakepit_broker_jobs_requeued_total",
                    "snakepit_broker_jobs_rejected_total", "snakepit_broker_jobs_expired_total"):
        assert d(nothing) == 0, nothing


def test_frontend_counts_tool_calls_by_status(delta):
    d = delta["mcp"]
    for _, status in MCP_MIX:
        assert d("snakepit_mcp_tool_calls_total", tool="execute_code", status=status) >= 1, status
    assert d("snakepit_mcp_request_duration_seconds_count", method="tools/call") >= N_MCP


def test_frontend_counts_the_auth_failure_and_the_rate_limited_calls(delta, mix):
    d = delta["mcp"]
    assert d("snakepit_mcp_auth_failures_total") == 1
    assert any(mix["limited"]), mix["limited"]
    assert d("snakepit_mcp_rate_limit_rejections_total") == sum(mix["limited"])
    assert d("snakepit_mcp_http_responses_total", code="401") == 1
