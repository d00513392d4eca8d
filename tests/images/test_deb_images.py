"""The images deploy/Containerfile.deb makes from the package (issue 27): built offline on a
debootstrap root, a farm of them — Redis, the broker, two executors, the front-end, each its
own container — answers a call in every profile the executor image serves; the image with the
package's Depends only serves python.basic and python.filesystem and not python.data_science;
an executor container stopped under load costs no call its answer."""
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
    f = ContainerFarm("norec")
    try:
        base = deb_images["base"]
        common = ["snakepit-executor", "--broker", "tcp://127.0.0.1:1", "--metrics", "off"]
        r = podman("run", "--rm", *RUNTIME, *SANDBOX, base, *common, "--profiles",
                   "python.data_science", check=False, timeout=300)
        assert r.returncode != 0
        assert "No module named" in r.stdout + r.stderr, (r.stdout + r.stderr)[-2000:]
        f.run("node", base, [*common, "--profiles", "python.basic,python.filesystem"],
              flags=SANDBOX)
        wait_for("both profiles' zygotes warm", lambda: f.logs("node").count("zygote_ready") >= 2,
                 timeout=120)
        assert f.running("node")
    finally:
        f.close()


def test_an_executor_container_stopped_under_load_costs_no_answer(farm):
    """podman stop (SIGTERM, then SIGKILL after the 75 s grace) of one executor while calls
    run: every call is answered ok, by the other node if need be."""
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
