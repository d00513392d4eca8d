"""deploy/compose/compose.yaml: a one-host farm with two executors, health checks on
every service, and the Redis settings the Kubernetes manifests use. Read as YAML (neither
docker compose nor podman-compose is needed): its structure, its flags against each binary's
--help, and the order in which services may start."""
import re

import pytest

from deploylib import check_command, compose, seconds

SERVICES = {"redis", "broker", "executor-1", "executor-2", "mcp"}


@pytest.fixture(scope="module")
def services():
    doc = compose()
    assert doc["name"] == "snakepit"
    return doc["services"]


def test_the_farm_has_two_executors_and_each_other_part(services):
    assert set(services) == SERVICES
    nodes = [s["command"][s["command"].index("--node-id") + 1]
             for n, s in services.items() if n.startswith("executor")]
    assert sorted(nodes) == ["executor-1", "executor-2"]  # distinct names at the broker


def test_every_service_is_hardened_and_uses_real_flags(services):
    for name, s in services.items():
        assert s["image"] and s["read_only"] is True and s["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in s["security_opt"], name
        check_command(s["command"])
    for name in ("executor-1", "executor-2"):
        ex = services[name]
        assert sorted(ex["cap_add"]) == ["SETFCAP", "SETGID", "SETUID"] and ex["user"] == "0:0"
        assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(ex["security_opt"])
        assert "ports" not in ex  # two nodes would clash


def test_every_service_has_a_health_check_on_its_own_endpoint(services):
    ports = {"broker": 9101, "executor-1": 9102, "executor-2": 9102, "mcp": 8765}
    for name, s in services.items():
        test = " ".join(s["healthcheck"]["test"])
        if name == "redis":
            assert "redis-cli ping" in test
        else:
            assert re.search(r"http://127\.0\.0\.1:%d/(healthz|readyz)" % ports[name], test), name
            flag = "--metrics" if name != "mcp" else "--http"
            listen = s["command"][s["command"].index(flag) + 1]
            assert listen.endswith(":%d" % ports[name]), (name, listen)


def test_services_start_once_what_they_need_is_healthy(services):
    for name, s in services.items():
        for dep, cond in s.get("depends_on", {}).items():
            assert cond == {"condition": "service_healthy"}, (name, dep)
            assert "healthcheck" in services[dep], dep
    assert set(services["mcp"]["depends_on"]) == {"redis", "broker"}
    assert set(services["executor-1"]["depends_on"]) == {"broker"}


def test_redis_persists_every_write_and_may_evict_only_records(services):
    cmd = services["redis"]["command"]
    opt = {cmd[i][2:]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
    assert opt["appendonly"] == "yes" and opt["appendfsync"] == "everysec"
    assert opt["maxmemory-policy"] == "volatile-lru" and re.fullmatch(r"\d+mb", opt["maxmemory"])
    assert int(opt["hash-max-listpack-value"]) >= 1024
    assert services["redis"]["volumes"] == ["redis-data:/data"]


def test_executors_get_the_drain_grace(services):
    for name in ("executor-1", "executor-2"):
        assert seconds(services[name]["stop_grace_period"]) == 75
