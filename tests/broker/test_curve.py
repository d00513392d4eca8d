"""CURVE + ZAP: keys from `snakepit keygen`, an allowlist directory, an unknown key refused
at the handshake, a plain client refused, the allowlist re-read on SIGHUP."""
import os
import shutil
import signal
import subprocess
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

import spwire as w
from conftest import BIN, wait_executors


def keygen(d, name):
    out = subprocess.run([os.path.join(BIN, "snakepit"), "keygen", "--dir", d, name],
                         capture_output=True, check=True, text=True)
    public = out.stdout.strip()
    secret = None
    for line in open(os.path.join(d, name + ".key_secret")):
        if line.strip().startswith("secret-key"):
            secret = line.split('"')[1]
    assert len(public) == 40 and secret and len(secret) == 40
    assert os.stat(os.path.join(d, name + ".key_secret")).st_mode & 0o077 == 0
    return {"public": public, "secret": secret, "file": os.path.join(d, name + ".key_secret")}


def handshake(ctx, broker, server, key, timeout_s=3):
    """'ok' when PING is answered, 'refused' when ZAP refuses the key, else 'silent'."""
    c = w.Client(ctx, broker.clients, server_public=server["public"], public=key["public"],
                 secret=key["secret"]) if key else w.Client(ctx, broker.clients)
    mon = c.sock.get_monitor_socket()
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            c.ping()
            msg = c.recv(200)
            if msg and msg[1] == w.PONG:
                return "ok"
            while mon.poll(0):
                if recv_monitor_message(mon)["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                    return "refused"
        return "silent"
    finally:
        c.sock.disable_monitor()
        mon.close(0)
        c.close()


def test_allowlisted_keys_work_unknown_and_plain_refused(ctx, make_broker, tmp):
    keys, allow = os.path.join(tmp, "keys"), os.path.join(tmp, "allow")
    os.makedirs(allow)
    server = keygen(keys, "broker")
    fe, node, intruder = keygen(keys, "frontend-1"), keygen(keys, "node-1"), keygen(keys, "intruder")
    for name in ("frontend-1", "node-1"):
        shutil.copy(os.path.join(keys, name + ".key"), allow)
    shutil.copy(os.path.join(keys, "broker.key_secret"), allow)  # a secret file is ignored
    broker = make_broker("--curve-secret-file", server["file"], "--curve-allow-dir", allow)
    assert server["public"] in broker.read_log()  # logged for operators to copy
    ex = w.Executor(ctx, broker.executors, node="curvy", server_public=server["public"],
                    public=node["public"], secret=node["secret"])
    wait_executors(broker, 1)
    assert "node=curvy" in broker.read_log() and "key=node-1" in broker.read_log()

    client = w.Client(ctx, broker.clients, server_public=server["public"], public=fe["public"],
                      secret=fe["secret"])
    jid = w.job_id()
    client.submit(jid, "t")
    assert ex.wait_jobs(1)
    ex.answer(jid, stdout=b"over curve")
    order, answers = w.collect_finals(client, 1, 10)
    assert w.decode_result(answers[jid][0][1])["stdout"] == b"over curve"

    assert handshake(ctx, broker, server, intruder) == "refused"
    assert handshake(ctx, broker, server, None) == "silent"  # plain text gets nowhere
    assert broker.metric("snakepit_broker_auth_total", result="denied") >= 1
    assert broker.metric("snakepit_broker_allowlist_keys") == 2
    assert "is not in the allowlist" in broker.read_log()

    shutil.copy(os.path.join(keys, "intruder.key"), allow)  # the operator admits it
    broker.proc.send_signal(signal.SIGHUP)
    broker.wait_metric("snakepit_broker_allowlist_keys", lambda v: v == 3)
    assert handshake(ctx, broker, server, intruder) == "ok"
    ex.close()
    client.close()


def test_curve_half_configured_refuses_to_start(tmp):
    keys = os.path.join(tmp, "keys")
    server = keygen(keys, "broker")
    p = subprocess.run([os.path.join(BIN, "snakepit-broker"), "--curve-secret-file", server["file"],
                        "--clients", "ipc://%s/c" % tmp, "--executors", "ipc://%s/w" % tmp,
                        "--metrics", "off"], capture_output=True, timeout=10)
    assert p.returncode != 0 and b"--curve-allow-dir" in p.stderr
    p = subprocess.run([os.path.join(BIN, "snakepit-broker"), "--curve-secret-file",
                        os.path.join(keys, "broker.key"), "--curve-allow-dir", keys,
                        "--clients", "ipc://%s/c" % tmp, "--executors", "ipc://%s/w" % tmp,
                        "--metrics", "off"], capture_output=True, timeout=10)
    assert p.returncode != 0 and b"no secret-key" in p.stderr
