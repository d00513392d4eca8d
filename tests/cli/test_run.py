"""`snakepit run` against a real farm: every flag, through the MCP endpoint (the default) and
straight to the broker (--broker)."""
import base64
import json
import os
import re
import urllib.request

import pytest

from clilib import EX_NOPERM, EX_UNAVAILABLE, EX_USAGE, EXIT, free_port, snakepit

NUMPY_SCRIPT = """# /// script
# dependencies = ["numpy"]
# ///
import numpy as np
print(int(np.arange(4).sum()))
"""


def run(env, *args, **kw):
    return snakepit("run", *args, env=env, **kw)


def test_prints_what_the_code_printed_then_the_result(env):
    r = run(env, "print('hi')\n6 * 7")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hi\n42\n"


@pytest.mark.parametrize("flag", [["-t5"], ["-t", "5"], ["--timeout=5"], ["--timeout", "5"]])
def test_timeout_takes_its_value_every_way(env, flag):
    r = run(env, *flag, "print(1)")
    assert r.returncode == 0 and r.stdout == "1\n", r.stderr


def test_timeout_ends_a_job_with_exit_3(env):
    r = run(env, "-t1", "while True: pass")
    assert r.returncode == EXIT["timeout"]
    assert re.search(r"snakepit: timeout: \S", r.stderr), r.stderr


def test_memory_limit_exits_5_with_a_reason(env):
    r = run(env, "-m", "64", "x = bytearray(10**9)")
    assert r.returncode == EXIT["memory_limit"]
    line = [l for l in r.stderr.splitlines() if l.startswith("snakepit: memory_limit")][0]
    assert re.match(r"snakepit: memory_limit: \S", line), line  # never an empty message


def test_error_exits_1_with_the_traceback(env):
    r = run(env, "1/0")
    assert r.returncode == EXIT["error"]
    assert "ZeroDivisionError" in r.stderr and "Traceback" in r.stderr


def test_syntax_error_exits_2(env):
    r = run(env, "def f(:")
    assert r.returncode == EXIT["syntax_error"] and "syntax_error" in r.stderr


def test_security_violation_exits_7(env):
    code = ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
            ".__init__.__globals__['system']('true')")
    r = run(env, code)
    assert r.returncode == EXIT["security_violation"]
    assert "security_violation" in r.stderr


def test_output_limit_over_http(farm, env):
    r = run(env, "-o", "100", "print('x' * 1000)")
    assert r.returncode == EXIT["output_limit"], r.stderr
    assert r.stdout == "x" * 100
    assert "truncated" in r.stderr or "output_limit" in r.stderr


def test_output_limit_straight_to_the_broker(farm, env):
    r = run(env, "--broker", farm.ready["broker"], "-o100", "print('x' * 1000)")
    assert r.returncode == EXIT["output_limit"], r.stderr
    assert r.stdout == "x" * 100
    assert "truncated" in r.stderr


def test_variables_are_printed_and_a_missing_one_is_named(env):
    r = run(env, "-v", "x", "-vy", "--var", "nosuch", "x = 6 * 7\ny = [0.1, 'a']")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "x = 42\ny = [0.1, \"a\"]\n"
    assert "variable 'nosuch' is not defined" in r.stderr


def test_stdin_flag_feeds_input(env):
    r = run(env, "--stdin", "world", "print('hello', input())")
    assert r.returncode == 0 and r.stdout == "hello world\n"


def test_code_from_a_file_and_from_stdin(env, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('from file')")
    assert run(env, "-f", str(script)).stdout == "from file\n"
    assert run(env, "--file=" + str(script)).stdout == "from file\n"
    assert run(env, "-", input="print('from stdin')").stdout == "from stdin\n"
    assert run(env, "-f", "-", input="print('dash f')").stdout == "dash f\n"


def test_code_is_needed_once(env, tmp_path):
    assert run(env).returncode == EX_USAGE
    assert run(env, "print(1)", "print(2)").returncode == EX_USAGE
    missing = run(env, "-f", str(tmp_path / "none.py"))
    assert missing.returncode == EX_USAGE and "none.py" in missing.stderr


def test_unknown_flags_and_bad_values_are_usage_errors(env):
    for args in (["--bogus", "1"], ["-x", "1"], ["-t", "0", "1"], ["-tfive", "1"]):
        r = run(env, *args)
        assert r.returncode == EX_USAGE, (args, r.stderr)
        assert r.stderr.strip(), args


def test_profile_flag(env):
    r = run(env, "--profile", "python.data_science", "import numpy; print(numpy.__name__)")
    assert r.returncode == 0 and r.stdout == "numpy\n", r.stderr
    basic = run(env, "--profile", "python.basic", "import numpy")
    assert basic.returncode == EXIT["error"]
    unknown = run(env, "--profile", "python.nosuch", "print(1)")
    assert unknown.returncode == EX_USAGE and "python.basic" in unknown.stderr


def test_pep723_block_routes_a_run_without_profile(farm, env, tmp_path):
    script = tmp_path / "np.py"
    script.write_text(NUMPY_SCRIPT)
    over_http = run(env, "-f", str(script))
    assert over_http.returncode == 0 and over_http.stdout == "6\n", over_http.stderr
    direct = run(env, "--broker", farm.ready["broker"], "-f", str(script))
    assert direct.returncode == 0 and direct.stdout == "6\n", direct.stderr


def test_an_explicit_profile_wins_over_the_pep723_block(env, tmp_path):
    script = tmp_path / "np.py"
    script.write_text(NUMPY_SCRIPT)
    r = run(env, "--profile", "python.basic", "-f", str(script))
    assert r.returncode == EXIT["error"] and "numpy" in r.stderr


def test_file_in_puts_files_in_the_workspace(env, tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\xffbinary")
    r = run(env, "--profile", "python.filesystem", "--file-in", str(tmp_path / "data.csv"),
            "--file-in", str(tmp_path / "blob.bin"),
            "print(open('data.csv').read().split()); print(open('blob.bin', 'rb').read())")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['a,b', '1,2']\nb'\\x00\\xffbinary'\n"


def test_file_in_problems_are_usage_errors(env, tmp_path):
    r = run(env, "--profile", "python.filesystem", "--file-in", str(tmp_path / "none"), "1")
    assert r.returncode == EX_USAGE and "none" in r.stderr
    (tmp_path / "d.txt").write_text("x")
    no_workspace = run(env, "--profile", "python.basic", "--file-in", str(tmp_path / "d.txt"), "1")
    assert no_workspace.returncode == EX_USAGE and "workspace" in no_workspace.stderr


PLOT = ("import matplotlib.pyplot as plt, pathlib\n"
        "plt.plot([1, 4, 9]); plt.savefig('out.png')\n"
        "pathlib.Path('sub').mkdir(); pathlib.Path('sub/r.txt').write_text('hi')\n")


def test_out_saves_figures_and_files_and_says_so(env, tmp_path):
    out = tmp_path / "o"
    r = run(env, "--profile", "python.data_science", "--out", str(out), PLOT + "None")
    assert r.returncode == 0, r.stderr
    assert (out / "figure-1.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (out / "out.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (out / "sub" / "r.txt").read_text() == "hi"
    for name in ("figure-1.png", "out.png", "sub/r.txt"):
        assert "saved %s/%s" % (out, name) in r.stderr


def test_out_straight_to_the_broker(farm, env, tmp_path):
    out = tmp_path / "o"
    r = run(env, "--broker", farm.ready["broker"], "--profile", "python.data_science",
            "--out", str(out), PLOT + "None")
    assert r.returncode == 0, r.stderr
    assert (out / "figure-1.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "sub" / "r.txt").read_text() == "hi"


def test_without_out_the_cli_says_what_it_did_not_save(env):
    r = run(env, "--profile", "python.data_science", PLOT + "None")
    assert r.returncode == 0
    assert "1 figure and wrote 2 files (--out DIR saves them)" in r.stderr


def test_out_that_cannot_be_written_exits_73(env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = run(env, "--profile", "python.data_science", "--out", str(blocker), PLOT + "None")
    assert r.returncode == 73 and "--out" in r.stderr


def test_json_is_the_structured_result_with_rounded_timings_and_the_pngs(env):
    r = run(env, "--json", "--profile", "python.data_science",
            "import matplotlib.pyplot as plt; plt.plot([1, 2]); x = 0.1", "-v", "x")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["status"] == "ok" and '"x": 0.1\n' in r.stdout  # not 0.10000000000000001
    timings = re.search(r'"timings": \{[^}]*\}', r.stdout).group(0)
    for number in re.findall(r"-?\d+\.\d+", timings):
        assert len(number.split(".")[1]) <= 3, timings  # no 0.34599999999999997
    png = base64.b64decode(s["images"][0]["data"])
    assert png.startswith(b"\x89PNG") and len(png) == s["images"][0]["bytes"]


def test_json_straight_to_the_broker_keeps_every_digit(farm, env):
    r = run(env, "--json", "--broker", farm.ready["broker"], "x = 0.1 + 0.2\nx * 2", "-vx")
    s = json.loads(r.stdout)
    assert r.returncode == 0 and s["status"] == "ok" and s["result"] == "0.6000000000000001"
    assert s["variables"]["x"] == 0.30000000000000004  # shortest, yet the same double


def test_validate_exits_0_2_or_1(env):
    ok = run(env, "--validate", "print(1)")
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True
    syntax = run(env, "--validate", "def f(:")
    assert syntax.returncode == EXIT["syntax_error"] and json.loads(syntax.stdout)["valid"] is False
    other = run(env, "--validate", "import ctypes")  # socket imports in every profile
    assert other.returncode == 1 and json.loads(other.stdout)["valid"] is False


def test_url_and_key_reach_a_farm_without_a_state_dir(farm, tmp_path):
    nowhere = {"SNAKEPIT_STATE_DIR": str(tmp_path)}
    r = snakepit("run", "--url", farm.url, "--key", farm.api_key, "print(7)", env=nowhere)
    assert r.returncode == 0 and r.stdout == "7\n", r.stderr
    r = snakepit("run", "print(8)", env={**nowhere, "SNAKEPIT_URL": farm.url,
                                         "SNAKEPIT_KEY": farm.api_key})
    assert r.returncode == 0 and r.stdout == "8\n", r.stderr


def test_a_refused_key_exits_77(env, farm):
    r = run(env, "--key", "sp_" + "0" * 64, "print(1)")
    assert r.returncode == EX_NOPERM and "--key" in r.stderr
    no_key = snakepit("run", "--url", farm.url, "print(1)", env={"SNAKEPIT_STATE_DIR": "/nonexistent"})
    assert no_key.returncode == EX_NOPERM


def test_farm_not_reachable_exits_69(tmp_path):
    empty = snakepit("run", "print(1)", env={"SNAKEPIT_STATE_DIR": str(tmp_path)})
    assert empty.returncode == EX_UNAVAILABLE and "snakepit up" in empty.stderr
    closed = snakepit("run", "--url", "http://127.0.0.1:%d/mcp" % free_port(), "--key", "k", "1")
    assert closed.returncode == EX_UNAVAILABLE and "cannot connect" in closed.stderr
    broker = snakepit("run", "--broker", "ipc://%s/none.sock" % tmp_path, "1")
    assert broker.returncode == EX_UNAVAILABLE


def test_broker_and_tenant_flags(farm, env):
    r = run(env, "--broker", farm.ready["broker"], "--tenant", "cli-direct", "print('direct')")
    assert r.returncode == 0 and r.stdout == "direct\n", r.stderr


def test_state_dir_flag(farm):
    r = snakepit("run", "--state-dir", farm.dir, "print(3)")
    assert r.returncode == 0 and r.stdout == "3\n"


def test_config_file_gives_options(farm, tmp_path):
    conf = tmp_path / "run.conf"
    conf.write_text("state-dir = %s\ntimeout = 1\n" % farm.dir)
    r = snakepit("run", "--config", str(conf), "while True: pass")
    assert r.returncode == EXIT["timeout"]


def test_rate_limited_runs_wait_and_succeed(farm, env):
    key = snakepit("tenant", "add", "cli-slow", "--rate", "0.5", "--burst", "1",
                   env=env).stdout.strip()
    for i in range(3):  # the 2nd and 3rd are answered 429 first, then let through
        r = run(env, "--key", key, "print(%d)" % i)
        assert r.returncode == 0 and r.stdout == "%d\n" % i, r.stderr
    r = run(env, "--key", key, "--retry-for", "0", "print(9)")
    assert r.returncode == EXIT["rejected"] and "rate limit" in r.stderr


def _open_sessions(farm):
    text = urllib.request.urlopen(farm.ready["metrics"][2], timeout=10).read().decode()
    return int(float(re.search(r'^snakepit_mcp_sessions\{transport="http"\} (\S+)$', text,
                               re.M).group(1)))


def test_runs_leave_no_mcp_session_open(farm, env):
    before = _open_sessions(farm)
    for _ in range(40):
        assert run(env, "pass").returncode == 0
    assert _open_sessions(farm) == before


def test_help_names_every_flag():
    r = snakepit("run", "--help")
    assert r.returncode == 0
    for flag in ("-t, --timeout", "-m, --memory", "-o, --output-limit", "-v, --var", "--profile",
                 "-f, --file", "--stdin", "--file-in", "--out", "--url", "--key", "--ca-file",
                 "--retry-for",
                 "--tenant", "--state-dir", "--broker", "--json", "--validate"):
        assert flag in r.stdout, flag
    for code in ("69 farm not reachable", "77 API key refused", "73 --out"):
        assert code in r.stdout.replace("\n", " "), code
