"""tests/cluster — three machines made of network namespaces : the
broker on one, a real executor node (snakepit-executor, sandboxed CPython) on each of the
other two, joined by a bridge, CURVE on everywhere. Two tenants put a few thousand jobs
through from the root namespace (the front-end's place); one executor host is killed
(SIGKILL of every process on it) mid-run. Every job must get exactly one answer, none lost
silently, the survivor must take the load, and a client whose CURVE key is not on the
allowlist must be refused at the handshake.

Needs root (ip netns, veth, bridge). Namespaces, links and processes are created here and
removed here, processes stopped by pid."""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "broker"))
import spwire as w  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SNAKEPIT_BIN", os.path.join(ROOT, "build", "bin"))
JOBS = 3000
WINDOW = 48

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2")


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def _wait_stopped(pid, limit_s=2.0):
    """Until the process is stopped (or gone): a signal is queued before it is acted on."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("T", "t", "Z", "X"):
            return
        time.sleep(0.001)


class Net:
    """A bridge in the root namespace with one veth per "host" namespace."""

    def __init__(self):
        self.tag = "%04x" % random.randrange(1 << 16)
        self.subnet = "10.%d.%d" % (100 + random.randrange(100), random.randrange(250))
        self.bridge = "spbr" + self.tag
        self.hosts = {}
        self.procs = []
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", self.subnet + ".254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")

    def host(self, name, octet):
        ns = "sp-%s-%s" % (name, self.tag)
        outer, inner = "spv%s%s" % (self.tag, name[:3]), "eth0"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        sh("ip", "link", "set", outer, "master", self.bridge, "up")
        sh("ip", "-n", ns, "addr", "add", "%s.%d/24" % (self.subnet, octet), "dev", inner)
        sh("ip", "-n", ns, "link", "set", inner, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        self.hosts[name] = (ns, outer, "%s.%d" % (self.subnet, octet))
        return self.hosts[name][2]

    def run(self, host, args, log):
        proc = subprocess.Popen(["ip", "netns", "exec", self.hosts[host][0]] + args,
                                stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def kill_host(self, host):
        """SIGKILL every process of the host: those in its network namespace and their
        descendants (the sandbox zygotes live in namespaces of their own). Each is stopped
        first, parents before children, so that none sees another die and speaks for it
        (a node that saw its session's process killed answered the next cell itself): a host
        that dies says nothing."""
        ns = self.hosts[host][0]
        roots = [int(p) for p in sh("ip", "netns", "pids", ns).stdout.split()]
        pids, frontier = set(roots), list(roots)
        while frontier:
            pid = frontier.pop()
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            _wait_stopped(pid)  # stopped, it forks no more: its children now are all it will have
            for task in os.listdir("/proc/%d/task" % pid) if os.path.isdir("/proc/%d" % pid) else []:
                try:
                    with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                        for child in f.read().split():
                            if int(child) not in pids:
                                pids.add(int(child))
                                frontier.append(int(child))
                except OSError:
                    pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for name, (ns, outer, _) in self.hosts.items():
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            sh("ip", "link", "del", outer, check=False)
            sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.bridge, check=False)


def keygen(d, name):
    public = subprocess.run([os.path.join(BIN, "snakepit"), "keygen", "--dir", d, name],
                            capture_output=True, check=True, text=True).stdout.strip()
    secret = [l.split('"')[1] for l in open(os.path.join(d, name + ".key_secret"))
              if l.strip().startswith("secret-key")][0]
    return {"public": public, "secret": secret, "dir": d, "name": name}


def metric(addr, name, **labels):
    text = urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all('%s="%s"' % kv in line for kv in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def _start(net, tmp, keys, allow):
    """The broker and two executor hosts, CURVE everywhere; the client endpoint and the
    broker's metrics address once both executors have registered."""
    b_ip = net.host("broker", 1)
    net.host("e1", 2)
    net.host("e2", 3)
    log = lambda n: open(os.path.join(tmp, n + ".log"), "ab")
    clients, executors, metrics = "tcp://%s:5555" % b_ip, "tcp://%s:5556" % b_ip, "%s:9101" % b_ip
    net.run("broker", [os.path.join(BIN, "snakepit-broker"), "--clients", clients,
                       "--executors", executors, "--metrics", metrics,
                       "--curve-secret-file", os.path.join(keys, "broker.key_secret"),
                       "--curve-allow-dir", allow, "--log-level", "info"], log("broker"))
    wait_for(lambda: "event=listening" in open(os.path.join(tmp, "broker.log")).read(), 10, "broker")
    for node in ("e1", "e2"):
        net.run(node, [os.path.join(BIN, "snakepit-executor"), "--broker", executors,
                       "--node-id", node, "--slots", "2", "--metrics", "off",
                       "--curve-server-key", os.path.join(keys, "broker.key"),
                       "--curve-secret-file", os.path.join(keys, node + ".key_secret")], log(node))
    wait_for(lambda: metric(metrics, "snakepit_broker_executors") == 2, 60, "two executors")
    return clients, metrics


def _keys(tmp):
    """The broker's, the front-end's and an intruder's key pairs; e1, e2 and the front-end on
    the broker's allowlist."""
    keys, allow = os.path.join(tmp, "keys"), os.path.join(tmp, "allow")
    os.makedirs(allow)
    made = {name: keygen(keys, name) for name in ("broker", "frontend", "intruder", "e1", "e2")}
    for name in ("e1", "e2", "frontend"):
        shutil.copy(os.path.join(keys, name + ".key"), allow)
    return keys, allow, made


@pytest.fixture
def cluster():
    tmp = tempfile.mkdtemp(prefix="spcl-", dir="/tmp")
    net = Net()
    try:
        yield net, tmp
    finally:
        net.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_executor_host_killed_under_load_every_job_answered_once(cluster):
    net, tmp = cluster
    keys, allow, made = _keys(tmp)
    broker_key, fe_key, intruder = made["broker"], made["frontend"], made["intruder"]
    clients, metrics = _start(net, tmp, keys, allow)
    broker_log = open(os.path.join(tmp, "broker.log")).read()
    assert "key=e1" in broker_log and "key=e2" in broker_log

    ctx = zmq.Context()
    try:
        # ---- a key that is not on the allowlist is refused at the handshake
        bad = w.Client(ctx, clients, server_public=broker_key["public"], public=intruder["public"],
                       secret=intruder["secret"])
        mon = bad.sock.get_monitor_socket()
        refused = False
        deadline = time.time() + 10
        while not refused and time.time() < deadline:
            bad.ping()
            assert bad.recv(100) is None
            while mon.poll(0):
                refused |= recv_monitor_message(mon)["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH
        assert refused
        bad.sock.disable_monitor()
        mon.close(0)
        bad.close()
        assert metric(metrics, "snakepit_broker_auth_total", result="denied") >= 1

        # ---- two tenants, a few thousand jobs, one executor host killed mid-run
        client = w.Client(ctx, clients, server_public=broker_key["public"], public=fe_key["public"],
                          secret=fe_key["secret"])
        ids = [w.job_id() for _ in range(JOBS)]
        answers, order = {}, []  # id -> [(cmd, result)], arrival order
        sent, killed_at = 0, None
        deadline = time.time() + 300
        while len(order) < JOBS and time.time() < deadline:
            while sent < JOBS and sent - len(order) < WINDOW:
                tenant = "alice" if sent % 2 else "bob"
                client.submit(ids[sent], tenant, code="x = %d\nprint(x * 2)" % sent)
                sent += 1
            msg = client.recv(200)
            if msg is None:
                continue
            if msg[1] in (w.RESULT, w.REJECT):
                jid = msg[3]
                if jid not in answers:
                    order.append(jid)
                answers.setdefault(jid, []).append((msg[1], w.decode_result(msg[4])))
            if killed_at is None and len(order) >= JOBS // 3:
                killed = net.kill_host("e1")
                assert killed
                killed_at = len(order)
        assert killed_at is not None
        # nothing more arrives: no second answer for anything
        while True:
            msg = client.recv(1500)
            if msg is None:
                break
            if msg[1] in (w.RESULT, w.REJECT):
                answers.setdefault(msg[3], []).append((msg[1], w.decode_result(msg[4])))
        client.close()
    finally:
        ctx.destroy(linger=0)

    assert len(answers) == JOBS, "%d jobs never answered" % (JOBS - len(answers))
    statuses, by_node = {}, {}
    for jid in ids:
        got = answers[jid]
        assert len(got) == 1, "job answered %d times" % len(got)
        cmd, res = got[0]
        statuses[res["status"]] = statuses.get(res["status"], 0) + 1
        by_node[res.get("executor")] = by_node.get(res.get("executor"), 0) + 1
    # e1's leased jobs were requeued once and ran on e2: nothing lost, nothing failed
    assert statuses == {"ok": JOBS}, statuses
    for i, jid in enumerate(ids[:50]):
        assert answers[jid][0][1]["stdout"] == b"%d\n" % (i * 2)
    # the survivor took the load: everything answered well after the kill ran on e2
    late = [answers[j][0][1].get("executor") for j in order[killed_at + 2 * WINDOW:]]
    assert late and set(late) == {"e2"}, set(late)
    assert by_node.get("e1", 0) >= JOBS // 10, by_node  # e1 had done its share before
    # its busy slots at the kill were leases: requeued once each, none lost
    assert metric(metrics, "snakepit_broker_jobs_requeued_total") >= 1
    assert metric(metrics, "snakepit_broker_jobs_lost_total") == 0
    assert metric(metrics, "snakepit_broker_executors") == 1
    assert metric(metrics, "snakepit_broker_executor_losses_total") >= 1
    broker_log = open(os.path.join(tmp, "broker.log")).read()
    assert "event=executor_lost node=e1" in broker_log
    assert "AddressSanitizer" not in broker_log and "runtime error" not in broker_log


class _Sessions:
    """Session jobs over the client channel, one answer awaited at a time."""

    def __init__(self, client, tenant="alice"):
        self.client, self.tenant = client, tenant

    def job(self, kind, code="", session=None, new_session=None, snapshot=None, timeout=60):
        import msgpack
        spec = {"v": 1, "kind": kind, "tenant": self.tenant, "service": w.SERVICE, "code": code,
                "limits": {"wall_ms": 10000}, "capture_output": True,
                "submitted_ms": int(time.time() * 1000)}
        route = {"tenant": self.tenant, "deadline_ms": 0, "max_inflight": 0, "attempt": 0}
        for key, value in (("session", session), ("new_session", new_session)):
            if value is not None:
                spec[key] = route[key] = value
        if snapshot is not None:
            spec["snapshot"] = snapshot
        jid = w.job_id()
        self.client.submit(jid, self.tenant, body=msgpack.packb(spec), route_body=msgpack.packb(route))
        deadline = time.time() + timeout
        while time.time() < deadline:
            msg = self.client.recv(200)
            if msg and msg[1] in (w.RESULT, w.REJECT) and msg[3] == jid:
                return w.decode_result(msg[4])
        raise AssertionError("no answer to a %s job" % kind)


def test_a_session_on_a_killed_host_is_lost_and_its_snapshot_restores_on_the_other(cluster):
    """The broker routes a session's cells to the executor holding it; when that host dies
    the next cell is answered lost with the reason (never run elsewhere), other work goes on,
    and a snapshot taken before restores the session on the surviving node."""
    import msgpack
    net, tmp = cluster
    keys, allow, made = _keys(tmp)
    clients, metrics = _start(net, tmp, keys, allow)
    ctx = zmq.Context()
    try:
        fe = made["frontend"]
        client = w.Client(ctx, clients, server_public=made["broker"]["public"],
                          public=fe["public"], secret=fe["secret"])
        s = _Sessions(client)
        sid = w.job_id()
        r = s.job("session_new", new_session=sid)
        assert r["status"] == "ok", r
        home = r["executor"]
        for _ in range(3):  # every cell goes where the session lives
            r = s.job("exec", "n = globals().get('n', 0) + 1\nx = 41", session=sid)
            assert r["status"] == "ok" and r["executor"] == home, r
        snap = s.job("session_snapshot", session=sid)
        assert snap["status"] == "ok" and snap["snapshot"], snap
        net.kill_host(home)
        r = s.job("exec", "print(x)", session=sid)
        assert r["status"] == "lost", r
        assert "session lost: its executor went away" in r["error"]["message"]
        assert "snapshot" in r["error"]["message"]
        r = s.job("exec", "print(x)", session=sid)  # and stays lost, never rerun elsewhere
        assert r["status"] in ("lost", "rejected") and "lost" in r["error"]["message"], r
        other = ({"e1", "e2"} - {home}).pop()
        r = s.job("exec", "print('plain job')")  # nothing else is affected
        assert r["status"] == "ok" and r["executor"] == other
        restored = w.job_id()
        r = s.job("session_restore", new_session=restored, snapshot=msgpack.packb(snap["snapshot"]))
        assert r["status"] == "ok" and r["executor"] == other, r
        r = s.job("exec", "print(x + 1, n)", session=restored)
        assert r["status"] == "ok" and r["stdout"] == b"42 3\n" and r["executor"] == other, r
        client.close()
    finally:
        ctx.destroy(linger=0)
    assert metric(metrics, "snakepit_broker_sessions") == 1
