"""The security corpus against a fully layered executor: each attack ends in its expected
status and none of the effects it was after happened (issue #3)."""
import os
import secrets

import pytest

from corpus import CASES


def _returned_text(r):
    return "\n".join(str(r.get(k) or "") for k in ("stdout", "stderr", "result", "variables")) + \
        str(r.get("error") or "")


@pytest.mark.parametrize("name,code,expected", CASES, ids=[c[0] for c in CASES])
def test_attack_is_contained(executor, listener, name, code, expected):
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    src = code.format(pwn=pwn, canary=executor.canary_path, port=listener.port)
    r = executor.run(src, wall_ms=3000, cpu_ms=2000, memory_mb=256, output_bytes=65536)
    text = _returned_text(r)
    assert r["status"] in expected, (r["status"], r.get("error"), r.get("exit"))
    assert not os.path.exists(pwn), "the attack created a file on the host"
    assert executor.secret not in text, "the executor's environment leaked"
    assert "CANARY-" not in text, "the canary file leaked"
    assert "root:x:0:0" not in text, "/etc/passwd leaked"
    assert not listener.contacted(), "the attack reached the network"
    if r["status"] == "security_violation":
        assert r["exit"]["syscall"], "a violation names the syscall or audit event it stopped"
    assert executor.alive()


def test_no_injected_line_in_the_hosts_log(executor):
    assert "INJECTED-LOG-LINE" not in executor.output()


def test_zygote_still_answers_after_the_corpus(executor):
    r = executor.run("print(sum(range(10)))")
    assert r["status"] == "ok" and r["stdout"] == "45\n"


def test_a_job_cannot_leave_state_for_the_next(executor):
    first = executor.run("import math, json, random\nmath.pi = 3\njson.dumps = None\n"
                         "__builtins__['len'] = None\nrandom.seed(1)\nprint(random.random())")
    assert first["status"] == "ok"
    second = executor.run("import math, json\nprint(math.pi, json.dumps([1]), len([1, 2]))")
    assert second["stdout"] == "3.141592653589793 [1] 2\n"


def test_each_job_gets_its_own_randomness(executor):
    draws = {executor.run("import random\nprint(random.random())")["stdout"] for _ in range(5)}
    assert len(draws) == 5  # children of one zygote must not replay its random state
