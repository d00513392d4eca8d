"""deploy/Containerfile.deb, read statically (tests/images builds and runs it with podman):
images on Debian 12 (debian:12, or a debootstrap root through the BASE argument) that install
the package `make deb` built, one target per component whose entry point and configuration the
package holds; the executor's adds exactly the package's Recommends."""
import os
import re

import pytest

from conftest import SRC

PATH = os.path.join(SRC, "deploy", "Containerfile.deb")


def stages():
    """{stage name: (base, [instruction lines])}, continuation lines joined, ARG defaults put
    in the FROM lines."""
    with open(PATH) as f:
        text = re.sub(r"\\\n\s*", " ", f.read())
    out, name, args = {}, None, {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^ARG\s+(\w+)=(\S+)$", line)
        if m and name is None:
            args[m.group(1)] = m.group(2)
            continue
        line = re.sub(r"^FROM\s+\$\{(\w+)\}", lambda v: "FROM " + args[v.group(1)], line)
        m = re.match(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$", line, re.I)
        if m:
            name = m.group(2) or "stage%d" % len(out)
            out[name] = (m.group(1), [])
        else:
            out[name][1].append(line)
    return out


def test_every_stage_is_debian_12():
    s = stages()
    for name, (base, _) in s.items():
        assert base == "debian:12" or base in s, (name, base)


def test_the_package_is_installed_with_apt():
    base = stages()["base"][1]
    assert any(re.match(r"^COPY snakepit_\*\.deb /tmp/$", l) for l in base)
    run = " ".join(l for l in base if l.startswith("RUN"))
    assert re.search(r"apt-get install -y --no-install-recommends /tmp/snakepit_\*\.deb", run)
    assert "apt-get update" in run and "rm -rf /var/lib/apt/lists/*" in run


@pytest.mark.parametrize("target,binary,conf,user", [
    ("executor", "/usr/bin/snakepit-executor", "/etc/snakepit/executor.conf", "root"),
    ("mcp", "/usr/bin/snakepit-mcp", "/etc/snakepit/mcp.conf", "snakepit"),
    ("broker", "/usr/bin/snakepit-broker", "/etc/snakepit/broker.conf", "snakepit"),
])
def test_targets_run_a_packaged_binary_with_its_configuration(root, target, binary, conf, user):
    base, lines = stages()[target]
    assert base == "base"
    entry = [l for l in lines if l.startswith("ENTRYPOINT")]
    assert entry == ['ENTRYPOINT ["%s"]' % binary]
    assert os.access(root + binary, os.X_OK)  # the package holds it
    cmd = [l for l in lines if l.startswith("CMD")][0]
    assert '"--config", "%s"' % conf in cmd and os.path.isfile(root + conf)
    assert ["USER %s" % user] == [l for l in lines if l.startswith("USER")]
    if user == "snakepit":  # the package's postinst creates it
        with open(os.path.join(root, "DEBIAN/postinst")) as f:
            assert "adduser --system" in f.read()


def test_the_executor_image_adds_exactly_the_packages_recommends(control):
    """Every profile's libraries, as the package names them (derived from the profiles table:
    tests/package/test_relations.py), each without recommendations of its own."""
    run = " ".join(l for l in stages()["executor"][1] if l.startswith("RUN"))
    assert "dpkg-query -W -f='${Recommends}' snakepit" in run
    assert "--no-install-recommends" in run
    assert "python3-sklearn" in control["Recommends"]
    cmd = [l for l in stages()["executor"][1] if l.startswith("CMD")][0]
    assert "python.data_science" in cmd


def test_the_redis_image_runs_the_packages_redis_with_snakepits_settings():
    base, lines = stages()["redis"]
    assert base == "base" and ["USER redis"] == [l for l in lines if l.startswith("USER")]
    cmd = [l for l in lines if l.startswith("CMD")][0]
    for setting in ('"--appendonly", "yes"', '"--maxmemory-policy", "volatile-lru"', '"--maxmemory"'):
        assert setting in cmd, setting
