"""monitoring/ against the real thing: promtool on the configuration and the rules, the real
Prometheus server scraping a running farm, and every query the alerts and the dashboard make
evaluated by that server and reading only series the components export."""
import json
import os
import subprocess
import tempfile
import time

import pytest
import yaml

import opslib
from opsfarm import COMPONENTS, free_port

RULES = os.path.join(opslib.MONITORING, "rules", "snakepit.rules.yml")
DASHBOARD = os.path.join(opslib.MONITORING, "grafana", "snakepit.json")


def load_rules():
    with open(RULES) as f:
        return yaml.safe_load(f)


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


# ---- static checks -----------------------------------------------------------------------

@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus-cluster.yml"])
def test_promtool_check_config_passes(config):
    r = opslib.promtool("check", "config", os.path.join(opslib.MONITORING, config))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def test_promtool_check_rules_passes():
    r = opslib.promtool("check", "rules", RULES)
    assert r.returncode == 0, r.stdout + r.stderr


def test_alert_rules_fire_as_their_unit_tests_expect():
    r = opslib.promtool("test", "rules", os.path.join(opslib.MONITORING, "rules", "snakepit.rules.test.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_alerts_cover_what_operators_page_on():
    alerts = {name for name, _ in opslib.rule_exprs(load_rules())}
    for wanted in ("SnakepitFarmDown", "SnakepitNoExecutors", "SnakepitQueueBackingUp",
                   "SnakepitHighRejectRate", "SnakepitJobsLost", "SnakepitHighViolationRate",
                   "RedisDown", "SnakepitRedisUnreachable", "SnakepitZygoteRestarting"):
        assert wanted in alerts
    for g in load_rules()["groups"]:
        for rule in g["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_dashboard_is_well_formed_grafana_json():
    d = load_dashboard()
    assert d["uid"] and d["title"] and d["schemaVersion"] >= 36
    names = [v["name"] for v in d["templating"]["list"]]
    assert names[0] == "datasource"
    ids = []

    def walk(panels):
        for p in panels:
            ids.append(p["id"])
            g = p["gridPos"]
            assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
            if p["type"] != "row":
                assert p["datasource"]["uid"] == "${datasource}", p["title"]
                assert p["targets"], p["title"]
            walk(p.get("panels", []))
    walk(d["panels"])
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_dashboard_has_the_panels_operators_want():
    titles = " | ".join(t for t, _ in opslib.dashboard_exprs(load_dashboard())).lower()
    for words in ("executions by status", "duration", "queue wait", "queue depth per service",
                  "executors by state", "slots busy", "rejections by reason", "rate-limit",
                  "kills by syscall", "authentication failures", "zygote restarts"):
        assert words in titles, words


# ---- the components' own output ----------------------------------------------------------

def test_promtool_check_metrics_finds_no_problem_in_any_component(mix):
    for comp in COMPONENTS:
        text = mix["after"][comp]
        assert "snakepit_build_info{" in text and "process_start_time_seconds" in text, comp
        r = subprocess.run([opslib.PROMTOOL, "check", "metrics"], input=text,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
            "%s:\n%s%s" % (comp, r.stdout, r.stderr)


def test_no_series_carries_a_tenant_or_job_id(mix):
    for comp in COMPONENTS:
        for (name, labels) in opslib.parse(mix["after"][comp]):
            for label, _ in labels:
                assert label not in ("tenant", "job_id", "execution_id", "id", "session"), (comp, name)


def test_every_series_the_rules_and_dashboard_read_is_exported(mix):
    exported = set()
    for comp in COMPONENTS:
        exported |= set(opslib.families(mix["after"][comp]))
    # Series that appear only once something happened, or that come from elsewhere:
    # up (Prometheus itself), redis_up (prometheus-redis-exporter), CURVE counters (only with
    # CURVE on), the rate-limit and Redis error counters (labelled series appear on first use).
    elsewhere = {"up", "redis_up"}
    only_with_curve = {"snakepit_broker_auth_total"}
    exprs = opslib.rule_exprs(load_rules()) + opslib.dashboard_exprs(load_dashboard())
    missing = []
    for where, expr in exprs:
        for name in opslib.metric_names(expr):
            fam = opslib.base_family(name)
            if fam not in exported and name not in elsewhere and fam not in only_with_curve:
                missing.append((where, name))
    assert not missing, missing


# ---- the real Prometheus server ----------------------------------------------------------

def test_prometheus_scrapes_every_component_of_the_farm(prom):
    targets = prom.targets()
    assert sorted(t["labels"]["job"] for t in targets) == ["snakepit-broker", "snakepit-executor", "snakepit-mcp"]
    for t in targets:
        assert t["health"] == "up", t
        assert t["labels"]["component"] == t["labels"]["job"].replace("snakepit-", "")


@pytest.mark.parametrize("expr,at_least", [
    ('sum(snakepit_executor_jobs_total{status="ok"})', 4),
    ('sum(snakepit_executor_jobs_total{status="error"})', 3),
    ('sum(snakepit_executor_jobs_total{status="timeout"})', 2),
    ('sum(snakepit_executor_jobs_total{status="security_violation"})', 2),
    ('sum(snakepit_executor_sandbox_kills_total)', 2),
    ('sum(snakepit_executor_job_wall_seconds_count)', 11),
    ('sum(snakepit_broker_jobs_completed_total)', 11),
    ('sum(snakepit_broker_queue_wait_seconds_count)', 11),
    ('sum(snakepit_broker_executors)', 1),
    ('sum(snakepit_broker_slots)', 2),
    ('sum(snakepit_mcp_tool_calls_total{tool="execute_code"})', 4),
    ('sum(snakepit_mcp_request_duration_seconds_count{method="tools/call"})', 4),
    ('sum(snakepit_mcp_auth_failures_total)', 1),
    ('sum(snakepit_mcp_rate_limit_rejections_total)', 1),
    ('sum(snakepit_build_info)', 3),
    ('count(up{job=~"snakepit-.*"} == 1)', 3),
])
def test_key_series_have_values_after_the_mix(prom, expr, at_least):
    prom.wait_value(expr, lambda v: v >= at_least, timeout=30)


def test_every_dashboard_query_evaluates_on_prometheus(prom):
    bad = []
    for title, expr in opslib.dashboard_exprs(load_dashboard()):
        r = prom.query(opslib.concrete(expr))
        if r.get("status") != "success":
            bad.append((title, expr, r.get("error")))
    assert not bad, bad


def test_dashboard_throughput_panel_shows_each_status_of_the_mix(prom):
    expr = [e for t, e in opslib.dashboard_exprs(load_dashboard()) if t == "Executions by status"][0]
    statuses = set()
    deadline = time.time() + 30  # rate() needs two scrapes after the mix
    while time.time() < deadline and not {"ok", "error", "timeout", "security_violation"} <= statuses:
        r = prom.query(opslib.concrete(expr))
        statuses = {s["metric"]["status"] for s in r["data"]["result"]}
        time.sleep(0.5)
    assert {"ok", "error", "timeout", "security_violation"} <= statuses, statuses


def test_every_alert_expression_evaluates_and_the_rules_load(prom):
    for name, expr in opslib.rule_exprs(load_rules()):
        r = prom.query(expr)
        assert r.get("status") == "success", (name, r.get("error"))
    rules = prom.api("rules")["data"]["groups"]
    assert {g["name"] for g in rules} == {g["name"] for g in load_rules()["groups"]}
    for g in rules:
        for rule in g["rules"]:
            assert rule["health"] in ("ok", "unknown"), (rule["name"], rule.get("lastError"))


def test_alerts_are_silent_on_a_healthy_farm(prom):
    """Without their `for:` delay: every critical alert, and the availability warnings,
    select nothing while the farm is whole (so they are not firing all the time)."""
    quiet = {"SnakepitComponentDown", "SnakepitExecutorDisconnected", "SnakepitQueueBackingUp",
             "SnakepitHighRejectRate", "SnakepitHighViolationRate"}
    for g in load_rules()["groups"]:
        for rule in g["rules"]:
            if rule["labels"]["severity"] != "critical" and rule["alert"] not in quiet:
                continue
            r = prom.query(rule["expr"])
            assert r["status"] == "success" and r["data"]["result"] == [], (rule["alert"], r["data"])


def test_cluster_configuration_discovers_the_farm_from_files(farm, mix):
    """prometheus-cluster.yml with its file_sd/*.yml pointing at this farm."""
    sd = tempfile.mkdtemp(prefix="sp-sd-", dir="/tmp")
    with open(os.path.join(opslib.MONITORING, "prometheus-cluster.yml")) as f:
        cfg = yaml.safe_load(f)
    cfg["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    cfg["rule_files"] = [RULES]
    addr = {c: u.split("//", 1)[1].split("/", 1)[0] for c, u in zip(COMPONENTS, farm.ready["metrics"])}
    jobs = []
    for job in cfg["scrape_configs"]:
        comp = job["job_name"].replace("snakepit-", "")
        if comp not in addr:
            continue  # redis: no exporter here
        (sdc,) = job["file_sd_configs"]
        (pattern,) = sdc["files"]
        with open(os.path.join(opslib.MONITORING, pattern)) as f:
            groups = yaml.safe_load(f)  # the example must be valid file_sd YAML
        assert groups[0]["targets"] and groups[0]["labels"]["component"] == comp
        path = os.path.join(sd, os.path.basename(pattern))
        with open(path, "w") as f:
            yaml.safe_dump([{"targets": [addr[comp]], "labels": {"component": comp}}], f)
        sdc["files"] = [path]
        jobs.append(job)
    cfg["scrape_configs"] = jobs
    p = opslib.Prometheus(yaml.safe_dump(cfg), free_port())
    try:
        targets = p.wait_targets_up(3)
        assert {t["labels"]["component"] for t in targets} == set(COMPONENTS)
    finally:
        p.stop()


def test_farm_down_and_component_down_select_a_dead_broker(farm, mix):
    """The real server, with the broker's target pointed at a port nothing listens on: the
    expressions of SnakepitFarmDown and SnakepitComponentDown select it (their `for:` aside)."""
    import socket
    with socket.socket() as s:  # a port that was free a moment ago, and nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = "127.0.0.1:%d" % s.getsockname()[1]
    ready = dict(farm.ready)
    ready["metrics"] = ["http://%s/metrics" % dead] + list(farm.ready["metrics"][1:])
    from opsfarm import one_host_config
    p = opslib.Prometheus(one_host_config(ready, RULES), free_port())
    try:
        p.wait_value('count(up{job="snakepit-broker"} == 0)', lambda v: v == 1, timeout=30)
        exprs = dict(opslib.rule_exprs(load_rules()))
        r = p.query(exprs["SnakepitFarmDown"])
        assert len(r["data"]["result"]) == 1, r
        r = p.query(exprs["SnakepitComponentDown"])
        assert [x["metric"]["job"] for x in r["data"]["result"]] == ["snakepit-broker"], r
    finally:
        p.stop()
