"""The security corpus against a fully layered executor: each attack ends in its expected
status and none of the effects it was after happened, in python.basic and in
python.data_science, whose workspace, numpy and pickles bring attacks of their own."""
import secrets

import pytest

from corpus import CASES, V, E, WORKSPACE_CASES, assert_contained

DS = "python.data_science"
# Every case against both profiles; the workspace attacks against the profile that has one. In
# python.data_science open() is the real one and more modules are loaded, so an attack the
# Python layer answers with an exception in python.basic may be stopped by the audit hook or
# seccomp there instead: both are containment, what is checked is the absent effect.
MATRIX = [("python.basic",) + c for c in CASES] + \
    [(DS, n, code, expected | {V} if E in expected else expected) for n, code, expected in CASES] + \
    [(DS,) + c for c in WORKSPACE_CASES]


@pytest.mark.parametrize("profile,name,code,expected", MATRIX,
                         ids=["%s-%s" % (c[0].split(".")[1], c[1]) for c in MATRIX])
def test_attack_is_contained(executors, listener, profile, name, code, expected):
    executor = executors(profile)
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    src = code.format(pwn=pwn, canary=executor.canary_path, port=listener.port)
    r = executor.run(src, service=profile, wall_ms=3000, cpu_ms=2000, memory_mb=256,
                     output_bytes=65536)
    assert_contained(executor, listener, r, pwn, expected)


def test_no_injected_line_in_the_hosts_log(executor):
    assert "INJECTED-LOG-LINE" not in executor.output()


@pytest.mark.parametrize("profile", ["python.basic", DS])
def test_zygote_still_answers_after_the_corpus(executors, profile):
    r = executors(profile).run("print(sum(range(10)))", service=profile)
    assert r["status"] == "ok" and r["stdout"] == "45\n"


def test_a_full_workspace_does_not_outlive_its_job(ds_executor):
    r = ds_executor.run("i = 0\nwhile True:\n    open('f%d' % i, 'wb').write(b'x' * (4 << 20))\n"
                        "    i += 1", service=DS, memory_mb=256)
    assert r["status"] == "error" and "No space left" in r["error"]["message"]
    for _ in range(4):  # every pooled child has room again
        r = ds_executor.run("open('a', 'wb').write(b'y' * (8 << 20))", service=DS)
        assert r["status"] == "ok", r.get("error")


# What a job leaves in memory must not be readable by the next one: numpy reads any address of
# its own process (as_strided), and every child inherits the zygote's heap, freed chunks too.
# This scans the C heap around a fresh buffer for another tenant's marker; without the
# zygote's scrubbing (executor-node/area/scrub.h) it finds the earlier jobs' code, files and output.
_HEAP_SCAN = (
    "import numpy as np\nfrom numpy.lib.stride_tricks import as_strided\n"
    "needle = ('7f3a9c' + 'TENANT-A-' + 'SECRET-').encode()\n"
    "arr = np.frombuffer(bytearray(4000), np.uint8)\nfound = 0\n"
    "for direction in (1, -1):\n    off = 0\n    while abs(off) < (1 << 20):\n"
    "        far = as_strided(arr, shape=(2,), strides=(off,))[1:]\n"
    "        found += as_strided(far, shape=(65600,), strides=(1,)).tobytes().count(needle)\n"
    "        off += direction * 65536\n"
    "print(found)\n")


def test_another_tenants_job_leaves_nothing_in_memory_a_later_job_can_read(ds_executor):
    before = ds_executor.run(_HEAP_SCAN, service=DS, wall_ms=20000)
    marker = "TENANT-A-SECRET-7f3a9c"
    for _ in range(3):
        r = ds_executor.run("x = %r\nprint(x * 3)\nopen('o.txt', 'w').write(x * 20)" % (marker * 5),
                            service=DS, files={"secret.txt": marker * 10}, stdin=marker * 4)
        assert r["status"] == "ok"
    after = ds_executor.run(_HEAP_SCAN, service=DS, wall_ms=20000)
    if before["status"] != "ok" or after["status"] != "ok":
        pytest.skip("the heap scan hit an unmapped page on this layout")
    assert after["stdout"] == before["stdout"] == "0\n"


def test_a_job_cannot_leave_state_for_the_next(executor):
    first = executor.run("import math, json, random\nmath.pi = 3\njson.dumps = None\n"
                         "__builtins__['len'] = None\nrandom.seed(1)\nprint(random.random())")
    assert first["status"] == "ok"
    second = executor.run("import math, json\nprint(math.pi, json.dumps([1]), len([1, 2]))")
    assert second["stdout"] == "3.141592653589793 [1] 2\n"


def test_each_job_gets_its_own_randomness(executor):
    draws = {executor.run("import random\nprint(random.random())")["stdout"] for _ in range(5)}
    assert len(draws) == 5  # children of one zygote must not replay its random state
