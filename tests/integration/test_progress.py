"""Progress of a running job, end to end: executor (output streamed from the job's shared
memory) → broker → front-end → notifications/progress on the call's SSE stream."""


def test_progress_streams_states_and_output(mcp):
    code = "import time\nprint('first line')\ntime.sleep(0.4)\nprint('second line')\n"
    msgs = mcp.post_all({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                         "params": {"name": "execute_code", "arguments": {"code": code},
                                    "_meta": {"progressToken": "tok-1"}}})
    notes = [m["params"] for m in msgs if m.get("method") == "notifications/progress"]
    final = [m for m in msgs if m.get("id") == 77]
    assert final and final[0]["result"]["structuredContent"]["status"] == "ok"
    assert all(n["progressToken"] == "tok-1" for n in notes)
    values = [n["progress"] for n in notes]
    assert values == sorted(values) and len(set(values)) == len(values)  # strictly increasing
    messages = [n.get("message", "") for n in notes]
    assert "queued" in messages and "running" in messages and messages[-1] == "done"
    streamed = "".join(m for m in messages if m.startswith("stdout: "))
    assert "first line" in streamed
    # the first line arrived while the job was still sleeping, before it ended
    assert messages.index(next(m for m in messages if "first line" in m)) < messages.index("done")
