"""deploy/: systemd units verified by systemd-analyze, example configurations loaded by the
binaries themselves, Kubernetes manifests and the compose file parsed and checked for limits,
probes and flags that exist, the container's runtime packages against what the binaries link,
and the executor's sandbox started with exactly the privileges the units and pods give it."""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

import opslib
from opsfarm import VIOLATION, free_port, snakepit

SYSTEMD = os.path.join(opslib.DEPLOY, "systemd")
K8S = os.path.join(opslib.DEPLOY, "kubernetes", "base")  # the variants beside it: tests/deploy
COMPOSE = os.path.join(opslib.DEPLOY, "compose", "compose.yaml")
SECRETS = os.path.join(opslib.DEPLOY, "kubernetes", "secrets.example.yaml")
BINARIES = ("snakepit-broker", "snakepit-executor", "snakepit-mcp")


def flags_of(binary):
    """The long flags a binary's --help lists."""
    out = subprocess.run([os.path.join(opslib.BIN, binary), "--help"], capture_output=True,
                         text=True, timeout=10).stdout
    return set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", out, re.M))


def check_command(argv, env_names=()):
    """argv[0] is one of our binaries and every flag (and SNAKEPIT_ variable) is one it has."""
    binary = os.path.basename(argv[0]) if argv else ""
    if binary not in BINARIES:
        return
    known = flags_of(binary)
    for a in argv[1:]:
        if a.startswith("--"):
            assert a.split("=", 1)[0] in known, "%s has no flag %s" % (binary, a)
    for name in env_names:
        if name.startswith("SNAKEPIT_"):
            flag = "--" + name[len("SNAKEPIT_"):].lower().replace("_", "-")
            assert flag in known, "%s has no option for %s" % (binary, name)


# ---- systemd ------------------------------------------------------------------------------

def units():
    return sorted(glob.glob(os.path.join(SYSTEMD, "*.service")))


def test_there_is_a_unit_per_component():
    assert [os.path.basename(u) for u in units()] == [
        "snakepit-broker.service", "snakepit-executor.service", "snakepit-mcp.service"]


def test_systemd_units_pass_systemd_analyze_verify():
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed on this machine")
    probe = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("systemd-analyze cannot run in this container: " + probe.stderr.strip())
    tmp = tempfile.mkdtemp(prefix="sp-units-", dir="/tmp")
    try:
        # verify checks that ExecStart's program exists: point it at this build's binaries
        for u in units():
            with open(u) as f:
                text = f.read().replace("/usr/local/bin/", opslib.BIN + "/")
            with open(os.path.join(tmp, os.path.basename(u)), "w") as f:
                f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", *sorted(glob.glob(tmp + "/*.service"))],
                           capture_output=True, text=True, timeout=60)
        # unknown keys and unparsable values are only warnings: any line about our units fails
        ours = [l for l in (r.stdout + r.stderr).splitlines() if "snakepit" in l]
        assert r.returncode == 0 and not ours, r.stdout + r.stderr
    finally:
        shutil.rmtree(tmp)


def unit_settings(path):
    settings = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "[")) and "=" in line:
                k, v = line.split("=", 1)
                settings.setdefault(k, []).append(v)
    return settings


@pytest.mark.parametrize("unit", ["snakepit-broker.service", "snakepit-executor.service", "snakepit-mcp.service"])
def test_units_are_hardened(unit):
    s = unit_settings(os.path.join(SYSTEMD, unit))
    for key, want in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                      ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("ProtectKernelModules", "yes"),
                      ("ProtectKernelTunables", "yes"), ("ProtectControlGroups", "yes"),
                      ("RestrictSUIDSGID", "yes"), ("LockPersonality", "yes")):
        assert s.get(key) == [want], (unit, key)
    # the executor's egress process lists this machine's addresses (getifaddrs: netlink)
    netlink = " AF_NETLINK" if unit == "snakepit-executor.service" else ""
    assert s["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6" + netlink], unit
    assert s["User"] and s["ExecStart"]
    check_command(s["ExecStart"][0].split())


def test_executor_unit_gives_the_sandbox_exactly_what_it_needs():
    s = unit_settings(os.path.join(SYSTEMD, "snakepit-executor.service"))
    assert sorted(s["RestrictNamespaces"][0].split()) == sorted("user pid net ipc uts mnt".split())
    assert sorted(s["CapabilityBoundingSet"][0].split()) == ["CAP_SETFCAP", "CAP_SETGID", "CAP_SETUID"]
    # nothing denies the syscalls the sandbox is built with
    for f in s.get("SystemCallFilter", []):
        assert f.startswith("~"), "an allowlist would have to name mount, pivot_root, unshare..."
        assert not {"@mount", "@privileged", "@system-service"} & set(f[1:].split()), f
    for c in ("broker", "mcp"):
        other = unit_settings(os.path.join(SYSTEMD, "snakepit-%s.service" % c))
        assert other["CapabilityBoundingSet"] == [""] and other["RestrictNamespaces"] == ["yes"]


# ---- example configuration files -------------------------------------------------------------

@pytest.mark.parametrize("component", ["broker", "executor", "mcp"])
def test_example_config_loads_in_the_binary(component):
    path = os.path.join(opslib.DEPLOY, "config", component + ".conf")
    binary = os.path.join(opslib.BIN, "snakepit-" + component)
    r = subprocess.run([binary, "--config", path, "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    # the commented-out alternatives are real options too
    with open(path) as f:
        alt = [m.group(1) + " = " + m.group(2) for m in
               (re.match(r"^# ([a-z][a-z-]*) = (\S.*?)\s*$", l) for l in f) if m and "#" not in m.group(2)]
    assert alt, "expected commented alternatives in " + path
    tmp = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    tmp.write("\n".join(alt) + "\n")
    tmp.close()
    try:
        r = subprocess.run([binary, "--config", tmp.name, "--help"], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, (alt, r.stderr)
    finally:
        os.unlink(tmp.name)


# ---- Kubernetes ----------------------------------------------------------------------------

def manifests():
    docs = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))) + [SECRETS]:
        with open(path) as f:
            docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d]
    return docs


def workloads():
    return [(f, d) for f, d in manifests() if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet")]


def test_kubernetes_manifests_parse_and_name_the_farm():
    docs = manifests()
    for _, d in docs:
        assert "apiVersion" in d and "kind" in d
    kinds = {(d["kind"], d["metadata"]["name"]) for _, d in docs if d["kind"] != "Kustomization"}
    for want in (("Namespace", "snakepit"), ("StatefulSet", "snakepit-redis"), ("Service", "snakepit-redis"),
                 ("StatefulSet", "snakepit-broker"), ("Service", "snakepit-broker"),
                 ("Deployment", "snakepit-mcp"), ("Service", "snakepit-mcp"),
                 ("Deployment", "snakepit-executor")):
        assert want in kinds, want


def test_every_container_has_requests_limits_and_both_probes():
    seen = 0
    for f, d in workloads():
        spec = d["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            seen += 1
            where = "%s/%s" % (d["metadata"]["name"], c["name"])
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][kind]), where
            for probe in ("livenessProbe", "readinessProbe"):
                p = c[probe]
                assert "httpGet" in p or "exec" in p or "tcpSocket" in p, (where, probe)
                if "httpGet" in p:  # a named port must be one the container declares
                    port = p["httpGet"]["port"]
                    assert port in [x.get("name") for x in c["ports"]] or isinstance(port, int), where
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, where
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, where
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], where
    assert seen >= 4


def test_kubernetes_containers_use_only_real_flags_and_options():
    for _, d in workloads():
        for c in d["spec"]["template"]["spec"]["containers"]:
            check_command(c.get("args", []), [e["name"] for e in c.get("env", [])])


def test_executor_pods_scale_horizontally_with_a_narrow_sandbox_privilege():
    (ex,) = [d for _, d in workloads() if d["metadata"]["name"] == "snakepit-executor"]
    assert ex["kind"] == "Deployment" and ex["spec"]["replicas"] >= 2
    (c,) = ex["spec"]["template"]["spec"]["containers"]
    sc = c["securityContext"]
    assert sorted(sc["capabilities"]["add"]) == ["SETFCAP", "SETGID", "SETUID"]
    assert sc.get("privileged") is False
    assert "hostNetwork" not in ex["spec"]["template"]["spec"]


def test_curve_keys_come_from_secrets():
    secrets = {d["metadata"]["name"] for _, d in manifests() if d["kind"] == "Secret"}
    assert secrets
    used = set()
    for _, d in workloads():
        spec = d["spec"]["template"]["spec"]
        used |= {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        for c in spec["containers"]:
            used |= {e["valueFrom"]["secretKeyRef"]["name"] for e in c.get("env", []) if "valueFrom" in e
                     and "secretKeyRef" in e["valueFrom"]}
    assert {"snakepit-broker-curve", "snakepit-executor-curve", "snakepit-mcp-curve",
            "snakepit-curve-allowed"} <= used
    assert used <= secrets, used - secrets  # every one is described in secrets.example.yaml


def test_kustomization_lists_every_manifest_but_the_secrets_example():
    with open(os.path.join(K8S, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    files = {os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))}
    assert set(k["resources"]) == files - {"kustomization.yaml"}


# ---- compose and the container image ----------------------------------------------------------

def test_compose_file_describes_a_one_host_farm_with_real_flags():
    with open(COMPOSE) as f:
        doc = yaml.safe_load(f)
    services = doc["services"]
    assert set(services) == {"redis", "broker", "executor-1", "executor-2", "mcp"}
    for name, s in services.items():
        assert s["image"] and s["read_only"] is True, name
        check_command(s["command"])
    ex = services["executor-1"]
    assert sorted(ex["cap_add"]) == ["SETFCAP", "SETGID", "SETUID"] and ex["cap_drop"] == ["ALL"]
    assert "ports" not in ex  # scaled replicas would clash
    assert services["mcp"]["ports"] == ["127.0.0.1:8765:8765"]


def test_container_runtime_packages_provide_every_library_the_binaries_need():
    """Each DT_NEEDED library of the four binaries comes from a package the runtime stage
    installs (or from libc6, which debian:12-slim has)."""
    with open(os.path.join(opslib.DEPLOY, "Containerfile")) as f:
        text = f.read()
    # Debian 12: debian:12-slim from a registry, or a debootstrap root (deploy/images)
    assert re.search(r"^ARG BASE=debian:12-slim$", text, re.M)
    runtime = text.split("\nFROM ${BASE}\n", 1)[1]
    pkgs = set(re.findall(r"\b(lib[a-z0-9.+-]+|python3\.11|tzdata|redis-server)\b",
                          runtime.split("rm -rf")[0]))
    if not shutil.which("readelf") or not shutil.which("dpkg-query"):
        pytest.skip("readelf or dpkg-query missing")
    ldconfig = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for binary in BINARIES + ("snakepit",):
        dyn = subprocess.run(["readelf", "-d", os.path.join(opslib.BIN, binary)], capture_output=True,
                             text=True).stdout
        for soname in re.findall(r"\(NEEDED\).*\[(.+)\]", dyn):
            m = re.search(r"\s%s \(.*\) => (\S+)" % re.escape(soname), ldconfig)
            assert m, soname
            owner = subprocess.run(["dpkg", "-S", os.path.realpath(m.group(1))], capture_output=True,
                                   text=True).stdout.split(":")[0]
            if not owner:  # /lib vs /usr/lib (merged /usr): ask for the other spelling
                owner = subprocess.run(["dpkg", "-S", m.group(1)], capture_output=True, text=True).stdout.split(":")[0]
            assert owner in pkgs | {"libc6"}, "%s needs %s from %s, not installed by the Containerfile" % (
                binary, soname, owner)


# ---- the sandbox with the privileges the units and pods grant ----------------------------------

def _run_executor_with(prefix, tmpdir):
    """A loopback broker, an executor started under `prefix` (setpriv ...), an ok job and a
    violation through it. Returns the two exit codes and the executor's log."""
    p_clients, p_exec = free_port(), free_port()
    procs = []
    try:
        broker = subprocess.Popen([os.path.join(opslib.BIN, "snakepit-broker"),
                                   "--clients", "tcp://127.0.0.1:%d" % p_clients,
                                   "--executors", "tcp://127.0.0.1:%d" % p_exec, "--metrics", "off",
                                   "--service-grace-ms", "20000"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(broker)
        log = open(os.path.join(tmpdir, "executor.log"), "w")
        ex = subprocess.Popen(prefix + [os.path.join(opslib.BIN, "snakepit-executor"),
                                        "--broker", "tcp://127.0.0.1:%d" % p_exec, "--metrics", "off",
                                        "--slots", "1"], stdout=log, stderr=subprocess.STDOUT)
        procs.append(ex)
        codes = []
        for code in ("import math; print(math.pi)", VIOLATION):
            r = snakepit("run", "--broker", "tcp://127.0.0.1:%d" % p_clients, code, timeout=60)
            codes.append(r.returncode)
        log.close()
        with open(os.path.join(tmpdir, "executor.log")) as f:
            return codes, f.read()
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def setpriv():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to the units' privileges")
    path = shutil.which("setpriv")
    if not path:
        pytest.skip("setpriv (util-linux) missing")
    return path


def test_executor_sandbox_runs_as_root_with_only_the_units_three_capabilities(setpriv, tmp_path):
    """snakepit-executor.service and the executor pods: root, bounding set
    CAP_SETUID+CAP_SETGID+CAP_SETFCAP, no_new_privs. Every layer must start."""
    codes, log = _run_executor_with([setpriv, "--no-new-privs", "--bounding-set", "-all,+setuid,+setgid,+setfcap",
                                     "--inh-caps", "-all", "--"], str(tmp_path))
    assert codes == [0, 7], log
    assert "layers=rlimits,namespaces,landlock,uid,nnp,seccomp,python" in log, log


def test_executor_sandbox_runs_unprivileged_with_no_capability(setpriv, tmp_path):
    """The unprivileged variant the unit documents: a plain uid, empty bounding set."""
    for d in (opslib.ROOT, opslib.BIN):
        if not os.stat(d).st_mode & 0o005:
            pytest.skip("the build is not readable by other users: " + d)
    os.chmod(str(tmp_path), 0o777)
    codes, log = _run_executor_with([setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups",
                                     "--no-new-privs", "--bounding-set", "-all", "--inh-caps", "-all", "--"],
                                    str(tmp_path))
    assert codes == [0, 7], log
    assert "namespaces" in log and "seccomp" in log, log
