"""`snakepit run` against a scripted MCP endpoint (clilib.FakeMcp): every job status and its
exit code, every way a call can fail, the retry after 429, the session it closes, and exactly
what it sends — things a real farm cannot be made to answer on demand."""
import json
import re

import pytest

from clilib import (EX_NOPERM, EX_UNAVAILABLE, EX_USAGE, EXIT, FakeMcp, answer_with, self_signed,
                    snakepit, structured, tool_result)


def run(fake, *args, **kw):
    return snakepit("run", "--url", fake.url, "--key", "k", *args, **kw)


@pytest.mark.parametrize("status", sorted(EXIT, key=EXIT.get))
def test_every_status_has_its_exit_code_and_a_reason(fake, status):
    fake.answer = answer_with(tool_result(structured(status)))
    r = run(fake, "print(1)")
    assert r.returncode == EXIT[status], r.stderr
    if status != "ok":  # the answer says nothing but the status: the CLI still says why
        assert re.search(r"^snakepit: %s: \S" % status, r.stderr, re.M), r.stderr


def test_an_error_message_and_syscall_are_shown(fake):
    fake.answer = answer_with(tool_result(structured(
        "security_violation", error={"type": "SecurityViolation", "message": "blocked",
                                     "traceback": None, "line": None},
        exit={"reason": "seccomp", "signal": 31, "syscall": "socket"})))
    r = run(fake, "1")
    assert r.returncode == EXIT["security_violation"]
    assert "snakepit: security_violation: SecurityViolation: blocked — socket" in r.stderr


def test_json_timings_are_rounded(fake):
    r = run(fake, "--json", "1")
    assert r.returncode == 0
    assert '"wall_ms": 0.346' in r.stdout and "0.34599999999999997" not in r.stdout


def test_arguments_sent_for_every_flag(fake, tmp_path):
    (tmp_path / "in.txt").write_text("text")
    (tmp_path / "in.bin").write_bytes(b"\x00\x01")
    r = run(fake, "-t", "7", "-m", "300", "-o", "1000", "-v", "a", "-v", "b", "--stdin", "s",
            "--profile", "python.filesystem", "--file-in", str(tmp_path / "in.txt"),
            "--file-in", str(tmp_path / "in.bin"), "code")
    assert r.returncode == 0, r.stderr
    (call,) = fake.calls()
    assert call["params"]["name"] == "execute_code"
    assert call["params"]["arguments"] == {
        "code": "code", "profile": "python.filesystem", "timeout": 7, "memory_limit": 300,
        "output_limit": 1000, "stdin": "s", "inspect_variables": ["a", "b"],
        "files": {"in.txt": "text", "in.bin": {"content": "AAE=", "encoding": "base64"}}}


def test_no_profile_is_sent_unless_given(fake):
    run(fake, "# /// script\n# dependencies = ['numpy']\n# ///\nimport numpy")
    assert "profile" not in fake.calls()[0]["params"]["arguments"]  # the front-end routes it


def test_validate_calls_validate_code_with_only_code_and_profile(fake):
    fake.answer = answer_with(tool_result({"valid": True}))
    r = run(fake, "--validate", "-t", "5", "--profile", "python.basic", "x = 1")
    assert r.returncode == 0
    assert fake.calls()[0]["params"] == {"name": "validate_code", "arguments": {
        "code": "x = 1", "profile": "python.basic"}}


def test_the_key_is_sent_and_the_session_closed(fake):
    assert run(fake, "1").returncode == 0
    posts = [h for m, h, _ in fake.requests if m == "POST"]
    assert all(h["Authorization"] == "Bearer k" for h in posts)
    deletes = [h for m, h, _ in fake.requests if m == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["Mcp-Session-Id"] == "fake-session-1"


def test_a_session_is_closed_after_a_failed_call_too(fake):
    fake.answer = answer_with(error={"code": -32602, "message": "bad"})
    assert run(fake, "1").returncode == EX_USAGE
    assert [m for m, _, _ in fake.requests].count("DELETE") == 1


def _limited_then_ok(times, retry_after_ms):
    seen = []

    def answer(msg):
        seen.append(msg)
        if len(seen) <= times:
            return 429, {"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32029, "message": "rate limit exceeded; retry in %d ms" % retry_after_ms,
                "data": {"retry_after_ms": retry_after_ms}}}, {"Retry-After": "1"}
        return 200, {"jsonrpc": "2.0", "id": msg["id"], "result": tool_result(structured())}, {}
    return answer


def test_429_is_retried_after_retry_after_ms(fake):
    fake.answer = _limited_then_ok(3, 4)
    r = run(fake, "1")
    assert r.returncode == 0, r.stderr
    assert len(fake.calls()) == 4


def test_429_past_the_retry_budget_exits_9(fake):
    fake.answer = _limited_then_ok(100, 2000)
    r = run(fake, "--retry-for", "1", "1")
    assert r.returncode == EXIT["rejected"] and "rate limit" in r.stderr
    assert len(fake.calls()) == 1  # a 2 s wait does not fit a 1 s budget: not sent again


def test_503_with_retry_after_is_retried_and_without_it_is_unreachable(fake):
    n = []

    def answer(msg):
        n.append(1)
        if len(n) == 1:
            return 503, {"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32030, "message": "broker unavailable"}}, {"Retry-After": "1"}
        return 503, {"jsonrpc": "2.0", "id": msg["id"], "error": {
            "code": -32030, "message": "broker unavailable"}}, {}
    fake.answer = answer
    r = run(fake, "1")
    assert r.returncode == EX_UNAVAILABLE and len(n) == 2, r.stderr


@pytest.mark.parametrize("status,error,exit_code", [
    (401, {"code": -32600, "message": "unauthorized: unknown API key"}, EX_NOPERM),
    (403, {"code": -32600, "message": "forbidden"}, EX_NOPERM),
    (200, {"code": -32602, "message": "unknown argument 'output_limit'"}, EX_USAGE),
    (200, {"code": -32031, "message": "too many requests in flight"}, EXIT["rejected"]),
    (200, {"code": -32603, "message": "internal"}, EXIT["internal_error"]),
    (500, None, EXIT["internal_error"]),
])
def test_failed_calls_exit_with_their_kind(fake, status, error, exit_code):
    fake.answer = answer_with(error=error or {"code": 0, "message": ""}, status=status)
    r = run(fake, "1")
    assert r.returncode == exit_code, r.stderr
    assert r.stderr.startswith("snakepit run: tools/call:"), r.stderr
    if error:
        assert error["message"] in r.stderr


def test_an_answer_without_structured_content_is_internal_error(fake):
    fake.answer = answer_with({"content": [{"type": "text", "text": "odd"}], "isError": True})
    r = run(fake, "1")
    assert r.returncode == EXIT["internal_error"] and "odd" in r.stderr


def test_a_figure_that_is_not_base64_is_refused(fake):
    fake.answer = answer_with(tool_result(structured(), content=[
        {"type": "text", "text": "x"}, {"type": "image", "data": "***", "mimeType": "image/png"}]))
    r = run(fake, "1")
    assert r.returncode == EXIT["internal_error"] and "base64" in r.stderr


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/evil", "a/../../b", "ok/\x01bad"])
def test_out_refuses_paths_that_leave_the_directory(fake, tmp_path, path):
    fake.answer = answer_with(tool_result(structured(files=[
        {"path": path, "bytes": 1, "encoding": "utf-8", "content": "x"}])))
    out = tmp_path / "out"
    r = run(fake, "--out", str(out), "1")
    assert r.returncode == 73, r.stderr
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "b").exists()


def test_out_does_not_follow_a_link_in_the_directory(fake, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "sub").symlink_to(tmp_path / "elsewhere")
    fake.answer = answer_with(tool_result(structured(files=[
        {"path": "sub/f.txt", "bytes": 1, "encoding": "utf-8", "content": "x"}])))
    r = run(fake, "--out", str(out), "1")
    assert r.returncode == 73
    assert not (tmp_path / "elsewhere" / "f.txt").exists()


def test_base64_files_are_saved_as_bytes(fake, tmp_path):
    fake.answer = answer_with(tool_result(structured(files=[
        {"path": "d/b.bin", "bytes": 2, "encoding": "base64", "content": "AP8="}])))
    r = run(fake, "--out", str(tmp_path), "1")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d" / "b.bin").read_bytes() == b"\x00\xff"
    assert json.loads(run(fake, "--json", "--out", str(tmp_path), "1").stdout)["saved"] == [
        "%s/d/b.bin" % tmp_path]


def test_https_with_the_servers_ca(tmp_path):
    cert, key = self_signed(str(tmp_path))
    fake = FakeMcp(tls=(cert, key))
    try:
        ok = snakepit("run", "--url", fake.url, "--key", "k", "--ca-file", cert, "1")
        assert ok.returncode == 0, ok.stderr
        assert len(fake.calls()) == 1 and fake.requests[-1][0] == "DELETE"
        # the system's trust store does not know a self-signed certificate: refused, unsent
        untrusted = snakepit("run", "--url", fake.url, "--key", "k", "1")
        assert untrusted.returncode == EX_UNAVAILABLE and "certificate" in untrusted.stderr
        assert len(fake.calls()) == 1
        bad_ca = snakepit("run", "--url", fake.url, "--key", "k", "--ca-file",
                          str(tmp_path / "none.pem"), "1")
        assert bad_ca.returncode == EX_UNAVAILABLE and "none.pem" in bad_ca.stderr
    finally:
        fake.stop()


def test_https_refuses_a_certificate_for_another_name(tmp_path):
    cert, key = self_signed(str(tmp_path / "other"), names="DNS:farm.example")
    fake = FakeMcp(tls=(cert, key))
    try:
        r = snakepit("run", "--url", fake.url, "--key", "k", "--ca-file", cert, "1")
        assert r.returncode == EX_UNAVAILABLE and "certificate" in r.stderr, r.stderr
        assert fake.calls() == []
    finally:
        fake.stop()


@pytest.mark.parametrize("kind,exit_code", [("invalid_argument", EX_USAGE), ("not_found", EX_USAGE),
                                            ("unavailable", EX_UNAVAILABLE)])
def test_a_refusal_as_a_tool_result_exits_with_its_kind(fake, kind, exit_code):
    """An argument error is a tool result with isError now (MCP 2025-11-25 tools, "Error Handling"),
    not a JSON-RPC error: its _meta kind still gives the exit status, its text the reason."""
    fake.answer = answer_with({"content": [{"type": "text", "text": "`session_id`: no session x"}],
                               "isError": True, "_meta": {"snakepit/error": {"kind": kind,
                                                                             "argument": "session_id"}}})
    r = run(fake, "1")
    assert r.returncode == exit_code, r.stderr
    assert "`session_id`: no session x" in r.stderr
