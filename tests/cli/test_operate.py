"""Operating a farm with the `snakepit` command: `up` on an address other machines
reach (refused without TLS or --allow-remote, served with either), `down` for a state
directory's farm, components' logs kept to a size, and the installed farm's /etc/snakepit
configuration read when no farm is named."""
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request

import pytest

import clilib
from clilib import EX_USAGE, Farm, free_port, snakepit
from ports import free_range
from farm import McpHttp, McpStdio

BASIC = ("--profiles", "python.basic")


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pids_of(state_dir):
    with open(os.path.join(state_dir, "up.pids")) as f:
        return {name: int(pid) for name, pid in (line.split() for line in f)}


# ---- up on an address other machines reach --------------------------------------------------

def test_up_refuses_plain_http_on_a_public_address_and_names_both_ways_out(tmp_path):
    state = str(tmp_path / "state")
    r = snakepit("up", "--state-dir", state, "--http", "0.0.0.0:%d" % free_port(), "--slots", "4",
                 timeout=30)
    assert r.returncode == EX_USAGE, r.stderr
    assert "--allow-remote" in r.stderr and "--tls-cert" in r.stderr, r.stderr
    assert not os.path.exists(state)  # refused before anything started


def test_tls_cert_and_key_go_together(tmp_path):
    cert, _ = clilib.self_signed(str(tmp_path))
    r = snakepit("up", "--state-dir", str(tmp_path / "s"), "--tls-cert", cert, timeout=30)
    assert r.returncode == EX_USAGE and "--tls-key" in r.stderr


def test_the_ports_up_picks_itself_come_from_the_port_range_given_and_never_one_asked_for():
    # four ports: the MCP endpoint's, asked for by flag, and three to pick (both brokers' and
    # the executor's /metrics, with --metrics-port 0): only one way to fit, the asked one kept
    lo, hi = free_range(4)
    with Farm(slots=1, extra=("--http", "127.0.0.1:%d" % lo, "--port-range", "%d-%d" % (lo, hi))
              + BASIC) as farm:
        assert farm.url == "http://127.0.0.1:%d/mcp" % lo
        picked = [int(url.rsplit(":", 1)[1].split("/")[0]) for url in farm.ready["metrics"][:2]]
        assert all(lo < port <= hi for port in picked) and len(set(picked)) == 2, (picked, lo, hi)
        for port in picked:  # and the components listen there
            urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
        r = snakepit("run", "--state-dir", farm.dir, "print(6*7)")
        assert r.returncode == 0 and r.stdout == "42\n", r.stderr


def test_a_port_range_too_small_for_the_farm_is_an_error_naming_it(tmp_path):
    lo, hi = free_range(2)  # three /metrics ports to pick
    r = snakepit("up", "--state-dir", str(tmp_path / "s"), "--port-range", "%d-%d" % (lo, hi),
                 "--metrics-port", "0", "--http", "127.0.0.1:%d" % free_port(), *BASIC, timeout=60)
    assert r.returncode != 0 and "no free port for the" in r.stderr, r.stderr
    assert "--port-range %d-%d" % (lo, hi) in r.stderr


@pytest.mark.parametrize("spec", ["9-5", "5", "a-b", "0-10", "10-70000", "1-2x"])
def test_a_port_range_that_is_not_one_is_refused_before_anything_starts(tmp_path, spec):
    state = str(tmp_path / "state")
    r = snakepit("up", "--state-dir", state, "--port-range", spec, timeout=30)
    assert r.returncode == EX_USAGE and "--port-range %s" % spec in r.stderr, r.stderr
    assert not os.path.exists(state)


def test_allow_remote_serves_plain_http_on_every_address():
    port = free_port()
    with Farm(slots=1, extra=("--http", "0.0.0.0:%d" % port, "--allow-remote") + BASIC) as farm:
        assert farm.url == "http://127.0.0.1:%d/mcp" % port
        assert farm.ready["remote_url"] == "http://%s:%d/mcp" % (socket.gethostname(), port)
        assert "other machines" in farm.output()
        r = snakepit("run", "--state-dir", farm.dir, "print(6*7)")
        assert r.returncode == 0 and r.stdout == "42\n", r.stderr
        assert "--allow-remote" in " ".join(open("/proc/%d/cmdline" % pids_of(farm.dir)["mcp"])
                                             .read().split("\0"))


def test_tls_serves_https_that_local_clients_trust(tmp_path):
    cert, key = clilib.self_signed(str(tmp_path))
    port = free_port()
    with Farm(slots=1, extra=("--http", "0.0.0.0:%d" % port, "--tls-cert", cert, "--tls-key", key)
              + BASIC) as farm:
        assert farm.url == "https://127.0.0.1:%d/mcp" % port
        assert farm.ready["ca_file"] == os.path.realpath(cert)
        ctx = ssl.create_default_context(cafile=cert)
        with urllib.request.urlopen("https://127.0.0.1:%d/healthz" % port, context=ctx,
                                    timeout=10) as resp:
            assert resp.status == 200
        r = snakepit("run", "--state-dir", farm.dir, "print('over tls')")
        assert r.returncode == 0 and r.stdout == "over tls\n", r.stderr
        with pytest.raises(OSError):  # and it is not plain HTTP (refused, or reset)
            urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=10)


# ---- down -------------------------------------------------------------------------------------

def test_down_stops_the_farm_by_the_pids_it_recorded():
    farm = Farm(slots=1, extra=BASIC)
    try:
        components = pids_of(farm.dir)
        assert set(components) == {"redis", "broker", "executor", "mcp"}
        with open(os.path.join(farm.dir, "up.lock")) as f:
            assert int(f.read()) == farm.proc.pid
        r = snakepit("down", "--state-dir", farm.dir, timeout=90)
        assert r.returncode == 0 and "stopped" in r.stderr, r.stderr
        assert farm.proc.wait(10) == 0  # `up` exited by itself, as on Ctrl-C
        assert not [n for n, p in components.items() if alive(p)]
        assert not os.path.exists(os.path.join(farm.dir, "ready.json"))
        assert not os.path.exists(os.path.join(farm.dir, "up.pids"))
        again = snakepit("down", "--state-dir", farm.dir)
        assert again.returncode == 0 and "no farm is running" in again.stderr
    finally:
        farm.stop()


def test_down_stops_the_farm_mcp_stdio_started_in_the_background(tmp_path):
    state = str(tmp_path / "st")
    env = dict(os.environ, SNAKEPIT_HTTP="127.0.0.1:0", SNAKEPIT_METRICS_PORT="0",
               SNAKEPIT_PROFILES="python.basic")
    client = McpStdio(state, extra=("--start-timeout", "120"), env=env)
    try:
        client.initialize()
        assert client.call("execute_code", {"code": "print(1)"})["structuredContent"]["status"] == "ok"
    finally:
        client.close()
    with open(os.path.join(state, "ready.json")) as f:
        up_pid = json.load(f)["pid"]
    components = pids_of(state)
    r = snakepit("down", "--state-dir", state, timeout=90)
    assert r.returncode == 0, r.stderr
    assert not alive(up_pid) and not [n for n, p in components.items() if alive(p)]


def test_down_never_signals_a_process_that_is_not_snakepit_up(tmp_path):
    """A lock held by something else (a stale or forged pid): named, and left alone."""
    lock = tmp_path / "up.lock"
    holder = subprocess.Popen(["flock", str(lock), "sleep", "60"])
    try:
        for _ in range(100):
            if lock.exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)  # flock has taken it
        lock.write_text("%d\n" % holder.pid)
        r = snakepit("down", "--state-dir", str(tmp_path), "--timeout", "2")
        assert r.returncode == 1 and "not `snakepit up`" in r.stderr, r.stderr
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


# ---- logs --------------------------------------------------------------------------------------

def test_component_logs_are_rotated_at_the_size_given_and_keep_whole_lines():
    with Farm(slots=1, extra=("--log-max-kb", "16", "--log-keep", "2") + BASIC) as farm:
        client = McpHttp(farm.url, farm.api_key)
        client.initialize()
        logs = os.path.join(farm.dir, "logs")
        for i in range(2000):  # the front-end logs a line or two per call
            client.call("execute_code", {"code": "%d" % i})
            if i % 100 == 99 and os.path.exists(os.path.join(logs, "mcp.log.2")) and \
                    os.path.getsize(os.path.join(logs, "mcp.log")) > 0:
                break
        farm.stop()  # the pump writes what it still holds
        names = sorted(os.listdir(logs))
        assert {"mcp.log", "mcp.log.1", "mcp.log.2"} <= set(names), names
        assert "mcp.log.3" not in names
        for name in ("mcp.log.1", "mcp.log.2"):
            size = os.path.getsize(os.path.join(logs, name))
            assert 16 * 1024 <= size < 16 * 1024 + 2048, (name, size)  # rotated at a line's end
            with open(os.path.join(logs, name)) as f:
                lines = f.read().split("\n")
            assert lines[-1] == "" and all(l.startswith("level=") for l in lines[:-1]), name


# ---- the installed farm's configuration -----------------------------------------------------------

def test_commands_find_the_installed_farms_redis_in_its_configuration(farm, tmp_path):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "mcp.conf").write_text("# as the package installs it\nhttp = 127.0.0.1:8765\n"
                                   "redis = %s\n" % farm.ready["redis"])
    env = {"SNAKEPIT_CONF_DIR": str(conf), "HOME": str(tmp_path), "XDG_STATE_HOME": ""}
    st = snakepit("status", "--json", env=env)
    assert st.returncode in (0, 1), st.stderr
    assert json.loads(st.stdout)["redis"] == farm.ready["redis"]
    listed = snakepit("tenant", "list", "--json", env=env)
    assert listed.returncode == 0 and "local" in listed.stdout, listed.stderr
    # a farm named explicitly still wins over the installed one
    (conf / "mcp.conf").write_text("redis = redis://127.0.0.1:1/0\n")
    assert snakepit("tenant", "list", "--state-dir", farm.dir, env=env).returncode == 0


def test_without_farm_or_configuration_the_error_says_where_it_looked(tmp_path):
    env = {"SNAKEPIT_CONF_DIR": str(tmp_path / "none"), "HOME": str(tmp_path), "XDG_STATE_HOME": ""}
    r = snakepit("tenant", "list", env=env)
    assert r.returncode == 69
    assert str(tmp_path / "none") in r.stderr and "--redis" in r.stderr, r.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a 0640 file anyway")
def test_an_unreadable_configuration_is_named_with_the_way_in(tmp_path):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "mcp.conf").write_text("redis = redis://127.0.0.1:6379/0\n")
    (conf / "mcp.conf").chmod(0)
    env = {"SNAKEPIT_CONF_DIR": str(conf), "HOME": str(tmp_path), "XDG_STATE_HOME": ""}
    r = snakepit("tenant", "list", env=env)
    assert r.returncode == 69 and "group snakepit" in r.stderr, r.stderr
