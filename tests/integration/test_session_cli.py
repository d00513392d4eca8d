"""`snakepit session new|run|fork|close|list` and `snakepit run --session` against a
real farm: what a person types in a shell."""
import json
import os
import subprocess

from farm import BIN


def sp(farm, *args, stdin=None):
    return subprocess.run([os.path.join(BIN, "snakepit"), *args, "--state-dir", farm.dir],
                          capture_output=True, text=True, input=stdin, timeout=120)


def test_a_session_from_the_shell(farm):
    r = sp(farm, "session", "new", "--profile", "python.basic", "--idle-timeout", "300")
    assert r.returncode == 0, r.stderr
    sid = r.stdout.strip()
    assert len(sid) == 36
    assert sp(farm, "session", "run", sid, "x = 20").returncode == 0
    r = sp(farm, "run", "--session", sid, "print(x + 1)")
    assert (r.returncode, r.stdout) == (0, "21\n"), r.stderr
    r = sp(farm, "session", "run", sid, "-", stdin="print(x * 2)")  # the code from stdin
    assert (r.returncode, r.stdout) == (0, "40\n"), r.stderr
    r = sp(farm, "session", "fork", sid)
    assert r.returncode == 0, r.stderr
    fid = r.stdout.strip()
    assert sp(farm, "session", "run", fid, "x = 1").returncode == 0
    assert sp(farm, "session", "run", sid, "print(x)").stdout == "20\n"
    r = sp(farm, "session", "list")
    assert r.returncode == 0 and sid in r.stdout and fid in r.stdout
    rows = json.loads(sp(farm, "session", "list", "--json").stdout)["sessions"]
    assert {row["session_id"] for row in rows} >= {sid, fid}
    # an error's exit status is the cell's, as with run
    assert sp(farm, "session", "run", sid, "1/0").returncode == 1
    for s in (sid, fid):
        assert sp(farm, "session", "close", s).returncode == 0
    r = sp(farm, "session", "run", sid, "print(x)")
    assert r.returncode == 9 and "closed" in r.stderr


def test_usage_errors(farm):
    assert sp(farm, "session", "fork").returncode == 64
    assert sp(farm, "session", "frobnicate").returncode == 64
    # arguments the farm refuses are usage errors, as for snakepit run
    r = sp(farm, "session", "close", "not-an-id")
    assert r.returncode == 64 and "session_id" in r.stderr
    r = sp(farm, "session", "--help")
    assert r.returncode == 0 and "snakepit session new" in r.stdout


def test_session_run_takes_its_options_anywhere(farm):
    sid = sp(farm, "session", "new", "--profile", "python.basic").stdout.strip()
    try:
        assert sp(farm, "session", "run", sid, "x = 5").returncode == 0
        for args in (["session", "run", "--json", "-t", "5", sid, "x * 2"],
                     ["session", "run", sid, "--json", "x * 2", "-t", "5"],
                     ["session", "--json", "run", sid, "-t", "5", "x * 2"]):
            r = sp(farm, *args)
            assert r.returncode == 0, (args, r.stderr)
            assert json.loads(r.stdout)["result"] == "10", (args, r.stdout)
    finally:
        sp(farm, "session", "close", sid)


def test_an_unknown_session_is_a_usage_error_that_says_so(farm):
    """Not internal_error: the id names no session of the tenant."""
    unknown = "01234567-89ab-7def-8123-456789abcdef"
    for args in (["session", "run", unknown, "print(1)"], ["run", "--session", unknown, "print(1)"],
                 ["session", "close", unknown], ["session", "fork", unknown]):
        r = sp(farm, *args)
        assert r.returncode == 64, (args, r.returncode, r.stderr)
        assert "no session " + unknown in r.stderr and "list_sessions" in r.stderr, r.stderr
