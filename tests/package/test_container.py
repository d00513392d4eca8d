"""deploy/Containerfile.deb, read statically (no container runtime here): images on debian:12
that install the package `make deb` built, an executor and a front-end target whose entry
points and configuration the package holds."""
import os
import re

import pytest

from conftest import SRC

PATH = os.path.join(SRC, "deploy", "Containerfile.deb")


def stages():
    """{stage name: (base, [instruction lines])}, continuation lines joined."""
    with open(PATH) as f:
        text = re.sub(r"\\\n\s*", " ", f.read())
    out, name = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
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


def test_the_executor_image_has_the_data_science_libraries():
    run = " ".join(l for l in stages()["executor"][1] if l.startswith("RUN"))
    for pkg in ("python3-numpy", "python3-pandas", "python3-scipy", "python3-matplotlib",
                "python3-sympy"):
        assert pkg in run
    cmd = [l for l in stages()["executor"][1] if l.startswith("CMD")][0]
    assert "python.data_science" in cmd
