"""tests/deploy/deploylib.py — what the deploy suite shares: where things are, the flags each
binary really has (from its --help), the objects of a Kubernetes variant, and the schema
validator (validate.mjs) run on them."""
import functools
import json
import os
import re
import subprocess
import tempfile

import yaml

import kustomize

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
K8S = os.path.join(DEPLOY, "kubernetes")
BIN = os.path.abspath(os.environ.get("SNAKEPIT_BIN") or os.path.join(ROOT, "build", "bin"))
BINARIES = ("snakepit-broker", "snakepit-executor", "snakepit-mcp")
VARIANTS = ("kubernetes", "kubernetes/hpa", "kubernetes/sentinel")


@functools.lru_cache(None)
def flags_of(binary):
    """The long flags a binary's --help lists."""
    out = subprocess.run([os.path.join(BIN, binary), "--help"], capture_output=True, text=True,
                         timeout=10).stdout
    return frozenset(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", out, re.M))


def check_command(argv, env_names=()):
    """argv[0] is one of our binaries and every flag (and SNAKEPIT_ variable) is one it has."""
    binary = os.path.basename(argv[0]) if argv else ""
    if binary not in BINARIES:
        return
    known = flags_of(binary)
    assert known, "no flags from %s --help (is it built?)" % binary
    for a in argv[1:]:
        if a.startswith("--"):
            assert a.split("=", 1)[0] in known, "%s has no flag %s" % (binary, a)
    for name in env_names:
        if name.startswith("SNAKEPIT_"):
            flag = "--" + name[len("SNAKEPIT_"):].lower().replace("_", "-")
            assert flag in known, "%s has no option for %s" % (binary, name)


@functools.lru_cache(None)
def _rendered(variant):
    return json.dumps(kustomize.render(os.path.join(DEPLOY, variant)))


def objects(variant):
    """The objects a variant renders to (a fresh copy)."""
    return json.loads(_rendered(variant))


def find(objs, kind, name):
    hits = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, (kind, name, len(hits))
    return hits[0]


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def container(obj, name=None):
    cs = pod_spec(obj)["containers"]
    return cs[0] if name is None else [c for c in cs if c["name"] == name][0]


def arg(c, flag):
    """The value of --flag=VALUE in a container's args."""
    for a in c.get("args", []):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def validate(objs):
    """validate.mjs on the objects: its list of errors."""
    node_modules = os.path.join(HERE, "node_modules", "kubernetes-models")
    assert os.path.isdir(node_modules), "tests/deploy/node_modules missing: run `make test-deploy`"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(objs, f)
    try:
        r = subprocess.run(["node", os.path.join(HERE, "validate.mjs"), f.name],
                           capture_output=True, text=True, timeout=120, cwd=HERE)
    finally:
        os.unlink(f.name)
    assert r.stdout.strip(), r.stderr
    report = json.loads(r.stdout)
    assert report["checked"] == len(objs)
    assert (r.returncode != 0) == bool(report["errors"]), r.stderr
    return report["errors"]


def unit_setting(unit, key):
    with open(os.path.join(DEPLOY, "systemd", unit)) as f:
        for line in f:
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
    return None


def compose():
    with open(os.path.join(DEPLOY, "compose", "compose.yaml")) as f:
        return yaml.safe_load(f)


def seconds(text):
    """"75s", "1m15s", 75 → 75."""
    if isinstance(text, int) or str(text).isdigit():
        return int(text)
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(text))
    assert m and (m.group(1) or m.group(2)), text
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)
