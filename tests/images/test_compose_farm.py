"""deploy/compose/compose.yaml run for real, with podman and without a compose tool:
the image deploy/Containerfile builds from source on a debootstrap root; each service started
as the file says (command, user, capabilities, security options, read-only root, volume),
in depends_on order, each waited for until its own health check passes inside it; then a
call answered in each profile the compose executors serve."""
import pytest
import yaml

from farm import McpHttp
from imagelib import ROOT, ContainerFarm, wait_for

CALLS = {
    "python.basic": ({"code": "print(2 ** 10)"}, "1024\n"),
    "python.filesystem": ({"code": "open('out.txt', 'w').write('kept'); print(open('out.txt').read())"},
                          "kept\n"),
}


def load():
    with open(ROOT + "/deploy/compose/compose.yaml") as f:
        return yaml.safe_load(f)


def order(services):
    """Services in an order where each comes after what it depends on."""
    done = []
    while len(done) < len(services):
        ready = [n for n, s in services.items() if n not in done
                 and all(d in done for d in s.get("depends_on", {}))]
        assert ready, "depends_on has a cycle"
        done += sorted(ready)
    return done


def flags(s, volumes):
    out = []
    if s.get("read_only"):
        out.append("--read-only")
    for cap in s.get("cap_drop", []):
        out += ["--cap-drop", cap]
    for cap in s.get("cap_add", []):
        out += ["--cap-add", cap]
    for opt in s.get("security_opt", []):
        out += ["--security-opt", opt]
    if "user" in s:
        out += ["--user", s["user"]]
    for v in s.get("volumes", []):
        name, path = v.split(":", 1)
        out += ["-v", "%s:%s" % (volumes[name], path)]
    return out


def healthy(f, name, check):
    test = check["test"]
    assert test[0] == "CMD", test
    return f.exec(name, *test[1:], check=False, timeout=30).returncode == 0


@pytest.fixture(scope="module")
def farm(source_image):
    doc = load()
    f = ContainerFarm("compose")
    try:
        volumes = {name: f.volume() for name in doc.get("volumes", {})}
        for name in order(doc["services"]):
            s = doc["services"][name]
            publish = [int(p.rsplit(":", 1)[1]) for p in s.get("ports", [])]
            f.run(name, source_image, s["command"], flags(s, volumes), publish=publish)
            wait_for("%s healthy" % name, lambda: healthy(f, name, s["healthcheck"]), timeout=300)
        f.url = "http://127.0.0.1:%d/mcp" % f.port("mcp", 8765)
        key = f.exec_ok("broker", "snakepit", "tenant", "add", "compose",
                        "--redis", "redis://redis:6379/0").strip()
        f.client = McpHttp(f.url, key)
        f.client.initialize()
        yield f
    except Exception:
        for alias in f.ids:
            print("---- %s\n%s" % (alias, f.logs(alias)[-3000:]))
        raise
    finally:
        f.close()


@pytest.mark.parametrize("profile", sorted(CALLS))
def test_the_compose_farm_answers_in_each_profile_it_serves(farm, profile):
    args, printed = CALLS[profile]
    s = farm.client.call("execute_code", dict(args, profile=profile))["structuredContent"]
    assert s["status"] == "ok" and s["stdout"] == printed, s


def test_every_service_stays_healthy_and_redis_writes_its_append_only_file(farm):
    doc = load()
    for name, s in doc["services"].items():
        assert farm.running(name), name
        assert healthy(farm, name, s["healthcheck"]), name
    assert farm.exec("redis", "redis-cli", "config", "get", "appendonly").stdout.split() == \
        ["appendonly", "yes"]
    assert farm.exec("redis", "ls", "/data/appendonlydir").stdout.strip()
    # both executors registered with the broker
    out = farm.exec("broker", "python3.11", "-c",
                    "import urllib.request; print(urllib.request.urlopen("
                    "'http://127.0.0.1:9101/metrics').read().decode())").stdout
    assert 'snakepit_broker_service_executors{service="python.filesystem"} 2' in out
