"""deploy/kubernetes and its variants: rendered offline (kustomize.py, checked
against `kubectl kustomize` where one is installed), valid against the schemas of the
Kubernetes API and of KEDA, and saying what a farm that scales and upgrades needs."""
import copy
import os
import re
import shutil
import subprocess

import pytest
import yaml

from deploylib import (DEPLOY, K8S, ROOT, VARIANTS, arg, check_command, compose, container, find,
                       objects, pod_spec, seconds, unit_setting, validate)

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
BROKERS = ["snakepit-broker-0.snakepit-broker", "snakepit-broker-1.snakepit-broker"]


def workloads(objs):
    return [o for o in objs if o["kind"] in WORKLOADS]


def containers(objs):
    return [(o, c) for o in workloads(objs) for c in pod_spec(o).get("initContainers", []) +
            pod_spec(o)["containers"]]


# ---- valid, as rendered -------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_is_valid_against_the_kubernetes_and_keda_schemas(variant):
    objs = objects(variant)
    assert len(objs) >= 15
    assert validate(objs) == []


def test_the_secrets_example_is_valid_too():
    with open(os.path.join(K8S, "secrets.example.yaml")) as f:
        objs = [d for d in yaml.safe_load_all(f) if d]
    assert validate(objs) == []


def test_the_validator_catches_a_wrong_type_and_a_field_the_api_does_not_have():
    objs = objects("kubernetes")
    ex = find(objs, "Deployment", "snakepit-executor")
    pod_spec(ex)["terminationGracePeriodSeconds"] = "75"  # a string
    container(ex)["livenessProbe"]["httpGet"]["paht"] = "/healthz"  # a typo
    so = find(objs, "ScaledObject", "snakepit-executor")
    so["spec"]["triggers"][0]["metadata"]["threshold"] = 3  # KEDA wants a string
    errors = validate([ex, so])
    text = "\n".join("%s: %s" % (e["object"], e["message"]) for e in errors)
    assert "terminationGracePeriodSeconds must be integer" in text, text
    assert "paht" in text, text
    assert "ScaledObject/snakepit-executor" in text and "threshold" in text, text


def kubectl_kustomize():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return None
    probe = subprocess.run([kubectl, "kustomize", "--help"], capture_output=True, text=True)
    return kubectl if probe.returncode == 0 else None


@pytest.mark.parametrize("variant", VARIANTS + ("kubernetes/base",))
def test_the_renderer_agrees_with_kubectl_kustomize(variant):
    kubectl = kubectl_kustomize()
    if not kubectl:
        pytest.skip("no kubectl with kustomize here (Debian 12's is 1.20): kustomize.py alone")
    out = subprocess.run([kubectl, "kustomize", os.path.join(DEPLOY, variant)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = [d for d in yaml.safe_load_all(out.stdout) if d]
    key = lambda o: (o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""),
                     o["metadata"]["name"])
    ours = {key(o): o for o in objects(variant)}
    assert ours == {key(o): o for o in theirs}


# ---- what the farm needs ------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_two_brokers_each_named_by_every_executor_and_front_end_in_one_order(variant):
    objs = objects(variant)
    brokers = find(objs, "StatefulSet", "snakepit-broker")
    assert brokers["spec"]["replicas"] == 2
    svc = find(objs, "Service", "snakepit-broker")
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert arg(container(brokers), "--instance") == "$(POD_NAME)"
    ex = container(find(objs, "Deployment", "snakepit-executor"))
    mcp = container(find(objs, "Deployment", "snakepit-mcp"))
    assert arg(ex, "--broker") == ",".join("tcp://%s:5556" % b for b in BROKERS)
    assert arg(mcp, "--broker") == ",".join("tcp://%s:5555" % b for b in BROKERS)
    assert arg(mcp, "--broker-instance") == "snakepit-broker-0"


def broker_metric_names():
    with open(os.path.join(ROOT, "broker", "metrics.c")) as f:
        return set(re.findall(r'"(snakepit_broker_[a-z_]+)"', f.read()))


def test_executors_scale_on_the_work_in_the_brokers_queues_with_keda():
    objs = objects("kubernetes")
    so = find(objs, "ScaledObject", "snakepit-executor")
    assert so["spec"]["scaleTargetRef"]["name"] == "snakepit-executor"
    assert find(objs, "Deployment", "snakepit-executor")
    assert so["spec"]["minReplicaCount"] >= 2 and so["spec"]["maxReplicaCount"] > 2
    (trigger,) = so["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    used = set(re.findall(r"snakepit_[a-z_]+", trigger["metadata"]["query"]))
    assert "snakepit_broker_queue_depth" in used
    assert used <= broker_metric_names(), used - broker_metric_names()  # the broker exports them
    down = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 60}]
    assert not [o for o in objs if o["kind"] == "HorizontalPodAutoscaler"]


def test_without_keda_a_plain_hpa_scales_on_the_same_gauges():
    objs = objects("kubernetes/hpa")
    assert not [o for o in objs if o["kind"] == "ScaledObject"]
    hpa = find(objs, "HorizontalPodAutoscaler", "snakepit-executor")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "snakepit-executor"}
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    with open(os.path.join(K8S, "hpa", "hpa.yaml")) as f:
        rule = f.read()  # the prometheus-adapter rule that serves the metric, in its comment
    assert "name: {as: %s}" % metric["external"]["metric"]["name"] in rule
    assert "snakepit_broker_queue_depth" in rule and "snakepit_broker_jobs_inflight" in rule


@pytest.mark.parametrize("variant", VARIANTS)
def test_disruption_budgets_keep_each_component_serving(variant):
    objs = objects(variant)
    budgets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PodDisruptionBudget"}
    for name in ("snakepit-broker", "snakepit-executor", "snakepit-mcp"):
        assert budgets[name]["spec"]["maxUnavailable"] == 1, name
        labels = pod_spec_labels(objs, name)
        assert budgets[name]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    if variant == "kubernetes/sentinel":
        assert budgets["snakepit-redis-ha"]["spec"]["maxUnavailable"] == 1


def pod_spec_labels(objs, name):
    (w,) = [o for o in workloads(objs) if o["metadata"]["name"] == name]
    return w["spec"]["template"]["metadata"]["labels"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_probes_ask_each_component_s_own_health_endpoint(variant):
    objs = objects(variant)
    for name, port, ready in (("snakepit-broker", "metrics", "/healthz"),
                              ("snakepit-executor", "metrics", "/healthz"),
                              ("snakepit-mcp", "http", "/readyz")):
        (w,) = [o for o in workloads(objs) if o["metadata"]["name"] == name]
        c = container(w)
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}, name
        assert c["readinessProbe"]["httpGet"] == {"path": ready, "port": port}, name
    # and they serve them: the broker's and the executor's metrics listener, the front-end
    with open(os.path.join(ROOT, "common", "metrics_http.c")) as f:
        assert '"/healthz"' in f.read()
    with open(os.path.join(ROOT, "mcp-frontend", "transport", "http.c")) as f:
        text = f.read()
    assert '"/healthz"' in text and '"/readyz"' in text


def test_executor_drains_on_termination_within_the_grace_systemd_and_compose_give():
    ex = find(objects("kubernetes"), "Deployment", "snakepit-executor")
    grace = pod_spec(ex)["terminationGracePeriodSeconds"]
    hook = container(ex)["lifecycle"]["preStop"]["exec"]["command"]
    assert hook[:2] == ["/bin/sh", "-c"] and "kill -TERM 1" in hook[2], hook
    assert "kill -0 1" in hook[2]  # waits for the node to have exited
    assert unit_setting("snakepit-executor.service", "KillMode") == "mixed"
    assert seconds(unit_setting("snakepit-executor.service", "TimeoutStopSec")) == grace
    services = compose()["services"]
    assert {seconds(services[s]["stop_grace_period"]) for s in services
            if s.startswith("executor")} == {grace}
    assert ex["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}


@pytest.mark.parametrize("variant", VARIANTS)
def test_network_policies_keep_executors_and_redis_to_themselves(variant):
    objs = objects(variant)
    pols = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "NetworkPolicy"}
    deny = pols["snakepit-default-deny"]
    assert deny["podSelector"] == {} and sorted(deny["policyTypes"]) == ["Egress", "Ingress"]
    assert "ingress" not in deny and "egress" not in deny
    executor_in = [r for p in pols.values() if p["podSelector"].get("matchLabels", {}).get(
        "app.kubernetes.io/name") == "snakepit-executor" for r in p.get("ingress", [])]
    for rule in executor_in:
        sources = rule["from"]
        if any("podSelector" in s and "namespaceSelector" not in s for s in sources):
            assert sources == [{"podSelector": {"matchLabels": {
                "app.kubernetes.io/name": "snakepit-broker"}}}], rule
        else:  # Prometheus: the metrics port and nothing else
            assert rule["ports"] == [{"protocol": "TCP", "port": 9102}], rule
    redis_in = [r for p in pols.values() if p["podSelector"].get("matchLabels", {}).get(
        "app.kubernetes.io/name") == "snakepit-redis" for r in p.get("ingress", [])]
    assert redis_in
    for rule in redis_in:
        assert rule["from"] == [{"podSelector": {"matchLabels": {
            "app.kubernetes.io/part-of": "snakepit"}}}], rule
    for w in workloads(objs):  # every pod of the farm is one of "snakepit's pods"
        assert w["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "snakepit"


def redis_args(c):
    text = " ".join(c.get("command", []) + c.get("args", []))
    return dict(re.findall(r"--([a-z-]+) ('[^']*'|\S+)", text))


def mib(quantity):
    m = re.fullmatch(r"(\d+)(Mi|Gi|mb|gb)", quantity)
    assert m, quantity
    return int(m.group(1)) * (1024 if m.group(2) in ("Gi", "gb") else 1)


@pytest.mark.parametrize("variant,name", [("kubernetes", "snakepit-redis"),
                                          ("kubernetes/sentinel", "snakepit-redis-ha")])
def test_redis_persists_every_write_and_is_bounded_below_its_memory_limit(variant, name):
    objs = objects(variant)
    redis = find(objs, "StatefulSet", name)
    c = container(redis, "redis")
    a = redis_args(c)
    assert a["appendonly"] == "yes" and a["appendfsync"] == "everysec"
    assert a["maxmemory-policy"] == "volatile-lru"
    assert int(a["hash-max-listpack-value"]) >= 1024
    limit = mib(c["resources"]["limits"]["memory"])
    assert mib(a["maxmemory"]) <= limit * 0.7, "room for an AOF rewrite's fork"
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    assert {"name": "data", "mountPath": "/data"} in c["volumeMounts"]
    # compose runs the same settings
    comp = redis_args({"command": compose()["services"]["redis"]["command"]})
    for k in ("appendonly", "appendfsync", "maxmemory", "maxmemory-policy"):
        assert comp[k] == a[k], k


def test_the_sentinel_variant_points_every_component_at_three_sentinels():
    objs = objects("kubernetes/sentinel")
    assert not [o for o in objs if o["metadata"]["name"] == "snakepit-redis"
                and o["kind"] in ("StatefulSet", "Service")]
    ha = find(objs, "StatefulSet", "snakepit-redis-ha")
    assert ha["spec"]["replicas"] == 3
    assert {c["name"] for c in pod_spec(ha)["containers"]} == {"redis", "sentinel"}
    sentinel = container(ha, "sentinel")["command"][2]
    assert "sentinel monitor snakepit $master 6379 2" in sentinel
    for o, c in containers(objs):
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        if "SNAKEPIT_REDIS" in env:
            url = env["SNAKEPIT_REDIS"]
            assert url.startswith("redis-sentinel://:$(REDIS_PASSWORD)@"), url
            assert url.count(":26379") == 3 and url.endswith("/snakepit/0"), url


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variable_a_container_refers_to_is_defined_before_it(variant):
    """Kubernetes expands $(NAME) only from variables earlier in the list; kustomize moves a
    patched variable first, which silently left the password out of the Redis URL once."""
    for o, c in containers(objects(variant)):
        seen = set()
        for e in c.get("env", []):
            for ref in re.findall(r"\$\(([A-Z_]+)\)", e.get("value", "")):
                assert ref in seen, (o["metadata"]["name"], e["name"], ref)
            seen.add(e["name"])
        for a in c.get("args", []):
            for ref in re.findall(r"\$\(([A-Z_]+)\)", a):
                assert ref in seen, (o["metadata"]["name"], a)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_container_has_requests_limits_a_hardened_context_and_real_flags(variant):
    for o, c in containers(objects(variant)):
        where = "%s/%s" % (o["metadata"]["name"], c["name"])
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(c["resources"][kind]), where
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"]["drop"] == ["ALL"], where
        check_command(c.get("args", []), [e["name"] for e in c.get("env", [])])


def test_the_executor_security_context_is_explained_line_by_line():
    with open(os.path.join(K8S, "base", "executor.yaml")) as f:
        lines = f.read().split("\n")
    start = [n for n, l in enumerate(lines) if l.strip() == "securityContext:"][0]
    indent = len(lines[start]) - len(lines[start].lstrip())
    block = []
    for l in lines[start + 1:]:
        if l.strip() and len(l) - len(l.lstrip()) <= indent:
            break
        block.append(l)
    settings = [n for n, l in enumerate(block) if l.strip() and not l.strip().startswith("#")
                and not l.strip().endswith(":")]
    assert len(settings) >= 10
    for n in settings:  # a comment right above each setting
        assert block[n - 1].strip().startswith("#"), block[n]
    ex = container(find(objects("kubernetes"), "Deployment", "snakepit-executor"))
    sc = ex["securityContext"]
    assert sorted(sc["capabilities"]["add"]) == ["SETFCAP", "SETGID", "SETUID"]
    assert sc["privileged"] is False and sc["seccompProfile"] == {"type": "Unconfined"}
