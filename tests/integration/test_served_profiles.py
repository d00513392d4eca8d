"""Only the profiles a farm serves are offered, and a call lands in one: a farm whose executor
serves python.basic alone (snakepit up --profiles python.basic) names no other profile in its tool
definitions, instructions, prompt or get_sandbox_info, refuses a call that names another at once (an
argument error naming the served ones, not the broker's NoExecutor after its grace), and runs code
that imports pandas without a profile in python.basic, saying where pandas would be. The front-end
learns what is served from the executors' sp:profiles hash, which every front-end reads alike."""
import pytest

from farm import Farm, McpHttp
from fe_harness import argument_error, wait_for

DS = "python.data_science"


@pytest.fixture(scope="module")
def basic_farm():
    f = Farm(slots=1, extra=["--profiles", "python.basic"])
    yield f
    f.stop()


@pytest.fixture(scope="module")
def mcp(basic_farm):
    c = McpHttp(basic_farm.url, basic_farm.api_key)
    c.initialize()

    def served():
        cap = c.call("get_sandbox_info", {})["structuredContent"]["capacity"]
        return cap["served_known"] and cap["profiles_served"] == ["python.basic"]
    # the executor reports its warm profiles every few seconds; the front-end reads them as often
    wait_for(served, 60, "the front-end to learn what the farm serves")
    return c


def test_only_served_profiles_are_advertised(mcp):
    tools = {t["name"]: t for t in mcp.request("tools/list")["result"]["tools"]}
    for name in ("execute_code", "validate_code", "create_session"):
        prop = tools[name]["inputSchema"]["properties"]["profile"]
        assert prop["enum"] == ["python.basic"], prop
        assert DS not in prop["description"] and "python.filesystem" not in prop["description"]
    assert DS not in tools["execute_code"]["description"]
    info = mcp.call("get_sandbox_info", {})
    assert [p["name"] for p in info["structuredContent"]["profiles"]] == ["python.basic"]
    assert DS not in info["content"][0]["text"]
    prompt = mcp.request("prompts/get", {"name": "write_sandbox_code", "arguments": {"task": "sum a list"}})
    assert DS not in prompt["result"]["messages"][0]["content"]["text"]


def test_a_call_naming_an_unserved_profile_is_refused_at_once(mcp):
    r = mcp.request("tools/call", {"name": "execute_code", "arguments": {"code": "1", "profile": DS}})
    text = argument_error(r, "profile")
    assert "not served" in text and "python.basic" in text, text
    r = mcp.request("tools/call", {"name": "create_session", "arguments": {"profile": DS}})
    assert "not served" in argument_error(r, "profile")


def test_pandas_without_a_profile_runs_in_the_served_one_and_says_where_pandas_is(mcp):
    r = mcp.call("execute_code", {"code": "import pandas as pd"})
    s = r["structuredContent"]
    assert s["profile"] == "python.basic" and s["error"]["type"] in ("ImportError", "ModuleNotFoundError"), s
    assert "pandas" in s["profile_reason"] and DS in s["profile_reason"], s["profile_reason"]
    assert "does not serve it" in s["profile_reason"]
    assert DS in r["content"][0]["text"]
