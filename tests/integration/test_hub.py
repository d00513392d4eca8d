"""`snakepit up --executors tcp://0.0.0.0:PORT`: the local farm becomes the hub of a multi-machine
farm with CURVE on. Another executor joins only once its public key is in the broker's
allowlist; the CLI and the front-end keep working over CURVE."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from farm import BIN, Farm, McpHttp, free_port


def _executors(farm):
    r = farm.redis()
    for key in r.scan_iter("sp:metrics:broker:*"):
        return int(r.hget(key, "executors") or 0)
    return 0


def _wait(pred, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


def test_hub_admits_only_allowed_executor_keys():
    port = free_port()
    farm = Farm(slots=1, extra=["--executors", "tcp://0.0.0.0:%d" % port])
    keydir = tempfile.mkdtemp(prefix="sp-keys-")
    extra = None
    try:
        assert "curve" in farm.ready
        out = subprocess.run([os.path.join(BIN, "snakepit"), "run", "--state-dir", farm.dir, "print(6*7)"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout == "42\n", out.stderr
        client = McpHttp(farm.url, farm.api_key)
        client.initialize()
        assert client.call("execute_code", {"code": "print(1)"})["structuredContent"]["status"] == "ok"
        assert _wait(lambda: _executors(farm) == 1)

        subprocess.run([os.path.join(BIN, "snakepit"), "keygen", "--dir", keydir, "exec-2"],
                       check=True, capture_output=True, timeout=30)
        broker_key = os.path.join(farm.dir, "keys", "broker.key")
        extra = subprocess.Popen(
            [os.path.join(BIN, "snakepit-executor"), "--broker", "tcp://127.0.0.1:%d" % port,
             "--curve-server-key", broker_key, "--curve-secret-file",
             os.path.join(keydir, "exec-2.key_secret"), "--slots", "1", "--metrics", "off",
             "--node-id", "exec-2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)
        assert _executors(farm) == 1  # its key is not allowed yet: refused
        assert "denied" in farm.component_log("broker")

        shutil.copy(os.path.join(keydir, "exec-2.key"), os.path.join(farm.dir, "keys", "allowed"))
        broker_pid = int(subprocess.run(["pgrep", "-P", str(farm.proc.pid), "-f", "snakepit-broker"],
                                        capture_output=True, text=True).stdout.split()[0])
        os.kill(broker_pid, signal.SIGHUP)  # reload the allowlist
        assert _wait(lambda: _executors(farm) == 2, 20)
    finally:
        if extra:
            extra.terminate()
            extra.wait(15)
        farm.stop()
        shutil.rmtree(keydir, ignore_errors=True)
