"""The images deploy/Containerfile.deb makes from the package: built offline on a
debootstrap root, a farm of them — Redis, the broker, two executors, the front-end, each its
own container — answers a call in every profile the executor image serves; the image with the
package's Depends only serves python.basic and python.filesystem and not python.data_science;
an executor container stopped under load drains: no call requeued, every one answered."""
import threading

import pytest

from farm import McpHttp
from imagelib import RUNTIME, SANDBOX, ContainerFarm, metric, podman, status_of, wait_for

PROFILES = ("python.basic", "python.filesystem", "python.data_science")
CALLS = {  # a call per profile, and what it prints
    "python.basic": ({"code": "print(sum(range(10)))"}, "45\n"),
    "python.filesystem": ({"code": "print(open('in.txt').read())", "files": {"in.txt": "hi"}},
                          "hi\n"),
    "python.data_science": ({"code": "import numpy as np, pandas as pd, sklearn.linear_model\n"
                                     "print(int(np.arange(4).sum()), len(pd.DataFrame({'a': [1, 2]})))"},
                            "6 2\n"),
}
REDIS = "redis://redis:6379/0"


@pytest.fixture(scope="module")
def farm(deb_images):
    f = ContainerFarm("deb")
    try:
        f.run("redis", deb_images["redis"], flags=["-v", f.volume() + ":/data"])
        f.run("broker", deb_images["broker"],
              ["--clients", "tcp://0.0.0.0:5555", "--executors", "tcp://0.0.0.0:5556",
               "--metrics", "0.0.0.0:9101", "--redis", REDIS, "--allow-plain-remote",
               "--instance", "broker"], publish=[9101])
        for n in (1, 2):
            f.run("executor-%d" % n, deb_images["executor"],
                  ["--broker", "tcp://broker:5556", "--metrics", "0.0.0.0:9102", "--redis", REDIS,
                   "--node-id", "executor-%d" % n, "--slots", "2",
                   "--profiles", ",".join(PROFILES)], flags=SANDBOX)
        f.run("mcp", deb_images["mcp"],
              ["--http", "0.0.0.0:8765", "--allow-remote", "--broker", "tcp://broker:5555",
               "--redis", REDIS, "--broker-instance", "broker"], publish=[8765])
        f.url = "http://127.0.0.1:%d/mcp" % f.port("mcp", 8765)
        f.metrics = "http://127.0.0.1:%d/metrics" % f.port("broker", 9101)
        wait_for("the front-end ready", lambda: status_of(f.url[:-4] + "/readyz") == 200)
        for p in PROFILES:  # both nodes registered, every zygote warm
            wait_for("two executors serving " + p, lambda: metric(
                f.metrics, "snakepit_broker_service_executors", service=p) == 2, timeout=300)
        key = f.exec_ok("broker", "snakepit", "tenant", "add", "images", "--max-concurrency", "16",
                        "--redis", REDIS).strip()
        f.client = McpHttp(f.url, key)
        f.client.initialize()
        yield f
    except Exception:
        for alias in f.ids:
            print("---- %s\n%s" % (alias, f.logs(alias)[-3000:]))
        raise
    finally:
        f.close()


@pytest.mark.parametrize("profile", PROFILES)
def test_a_call_is_answered_in_each_profile_the_executor_image_serves(farm, profile):
    args, printed = CALLS[profile]
    s = farm.client.call("execute_code", dict(args, profile=profile))["structuredContent"]
    assert s["status"] == "ok" and s["stdout"] == printed, s


def test_the_redis_image_persists_and_is_bounded(farm):
    for name, want in (("appendonly", "yes"), ("maxmemory-policy", "volatile-lru"),
                       ("maxmemory", str(640 * 1024 * 1024))):
        got = farm.exec("redis", "redis-cli", "config", "get", name).stdout.split()
        assert got == [name, want], got
    assert farm.exec("redis", "ls", "/data/appendonlydir").stdout.strip()


def test_the_package_without_recommends_serves_basic_and_filesystem_only(deb_images):
    """The image with the package's Depends only, asked for all three profiles: the node serves
    python.basic and python.filesystem, says why not python.data_science (its log and
    /metrics), and registers with the broker for those two alone."""
    f = ContainerFarm("norec")
    try:
        f.run("broker", deb_images["broker"],
              ["--clients", "tcp://0.0.0.0:5555", "--executors", "tcp://0.0.0.0:5556",
               "--metrics", "0.0.0.0:9101", "--allow-plain-remote"], publish=[9101])
        f.run("node", deb_images["base"],
              ["snakepit-executor", "--broker", "tcp://broker:5556", "--metrics", "127.0.0.1:9102",
               "--profiles", ",".join(PROFILES)], flags=SANDBOX)
        wait_for("the node serving", lambda: "event=serving" in f.logs("node"), timeout=180)
        assert f.running("node")
        logs = f.logs("node")
        assert "event=serving profiles=python.basic,python.filesystem " \
               "unserved=python.data_science" in logs, logs[-3000:]
        unserved = [l for l in logs.splitlines() if "event=profile_unserved" in l]
        assert len(unserved) == 1 and "profile=python.data_science" in unserved[0], unserved
        assert "No module named" in unserved[0], unserved
        text = f.exec("node", "python3.11", "-c", "import urllib.request; print(urllib.request."
                      "urlopen('http://127.0.0.1:9102/metrics').read().decode())").stdout
        served = {l.split('profile="')[1].split('"')[0]: l.rsplit(" ", 1)[1]
                  for l in text.splitlines() if l.startswith("snakepit_executor_profile_served{")}
        assert served == {"python.basic": "1", "python.filesystem": "1",
                          "python.data_science": "0"}, served
        broker = "http://127.0.0.1:%d/metrics" % f.port("broker", 9101)
        wait_for("the node registered", lambda: metric(
            broker, "snakepit_broker_service_executors", service="python.basic") == 1)
        assert metric(broker, "snakepit_broker_service_executors", service="python.filesystem") == 1
        assert not metric(broker, "snakepit_broker_service_executors",
                          service="python.data_science")  # never advertised: no such service
    finally:
        f.close()


def test_an_executor_container_stopped_under_load_costs_no_answer(farm):
    """podman stop (SIGTERM, then SIGKILL after the 75 s grace) of one executor while calls
    run: it drains — its running calls finish there, the broker requeues none of them and sends
    it no new one — and exits by itself; every call is answered ok, by the other node if need
    be."""
    statuses, lock = [], threading.Lock()

    def caller():
        c = McpHttp(farm.url, farm.client.api_key)
        c.initialize()
        for _ in range(12):
            s = c.call("execute_code", {"code": "import time; time.sleep(0.3); print('x')",
                                        "profile": "python.basic"})["structuredContent"]
            with lock:
                statuses.append(s["status"])

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    wait_for("calls under way", lambda: len(statuses) >= 8, timeout=120, every=0.1)
    farm.stop("executor-2")
    for t in threads:
        t.join(300)
    assert not farm.running("executor-2")
    assert len(statuses) == 48 and set(statuses) == {"ok"}, statuses
    code = podman("inspect", "--format", "{{.State.ExitCode}}", farm.ids["executor-2"]).stdout
    logs = farm.logs("executor-2")
    assert code.strip() == "0" and "event=drained" in logs, (code, logs[-3000:])
    assert metric(farm.metrics, "snakepit_broker_jobs_requeued_total", service="python.basic") == 0
    assert metric(farm.metrics, "snakepit_broker_executor_drains_total") == 1
