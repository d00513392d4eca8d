"""The package installed, upgraded and purged as dpkg does it:

- into a fresh, throwaway root, with the maintainer scripts run outside it
  (--force-script-chrootless, every system command they call stubbed): installed and
  configured, the documentation and the monitoring files in /usr/share/doc/snakepit, then
  purged without a trace;
- an upgrade on a machine with systemd: the old package's prerm and the new one's postinst in
  dpkg's order, through the real deb-systemd-invoke and a systemctl stand-in that keeps each
  unit's state: the units that ran run again, restarted, and none is left stopped."""
import gzip
import json
import os
import subprocess

import pytest
import yaml

from pkglib import STUBS, UNITS, active, run_with_systemd, units_dir

DOCS = ("README.md.gz", "deploy.md.gz", "monitoring.md.gz", "PROTOCOL.md.gz", "copyright",
        "changelog.gz")
MONITORING = ("examples/monitoring/prometheus.yml", "examples/monitoring/rules/snakepit.rules.yml",
              "examples/monitoring/grafana/snakepit.json", "examples/monitoring/file_sd/executor.yml")


def fresh_root(tmp_path):
    admin = tmp_path / "root/var/lib/dpkg"
    for d in ("info", "updates", "triggers"):
        (admin / d).mkdir(parents=True)
    for f in ("status", "available"):
        (admin / f).write_text("")
    return tmp_path / "root"


def dpkg(root, tmp_path, *args):
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    for name, body in STUBS.items():
        (stubs / name).write_text('#!/bin/sh\necho "%s $*" >> %s\n%s\n' % (name, log, body))
        (stubs / name).chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (stubs, os.environ["PATH"]))
    r = subprocess.run(["dpkg", "--root", str(root), "--force-not-root", "--force-depends",
                        "--force-script-chrootless", *args], env=env, capture_output=True,
                       text=True, timeout=120)
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return r, calls


def test_installs_and_configures_into_a_fresh_root_then_purges_cleanly(deb, tmp_path):
    root = fresh_root(tmp_path)
    r, calls = dpkg(root, tmp_path, "--install", deb)
    assert r.returncode == 0, r.stderr
    status = subprocess.run(["dpkg", "--root", str(root), "-s", "snakepit"], capture_output=True,
                            text=True).stdout
    assert "Status: install ok installed" in status, status
    assert "adduser --system --group --no-create-home --home /nonexistent --quiet snakepit" in calls
    assert not any(c.startswith(("systemctl", "deb-systemd")) for c in calls), calls  # DPKG_ROOT
    for f in ("usr/bin/snakepit", "usr/bin/snakepit-zygote", "etc/snakepit/mcp.conf",
              "lib/systemd/system/snakepit-executor.service"):
        assert (root / f).exists(), f
    doc = root / "usr/share/doc/snakepit"
    for f in DOCS + MONITORING:
        assert (doc / f).is_file(), f
    with gzip.open(doc / "deploy.md.gz", "rt") as f:
        assert "## " in f.read()
    with open(doc / "examples/monitoring/rules/snakepit.rules.yml") as f:
        assert yaml.safe_load(f)["groups"]
    with open(doc / "examples/monitoring/grafana/snakepit.json") as f:
        assert json.load(f)["panels"]
    r, calls = dpkg(root, tmp_path, "--purge", "snakepit")
    assert r.returncode == 0, r.stderr
    left = [os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns
            if not os.path.relpath(d, root).startswith("var/lib/dpkg")]
    assert left == [], left


def script(root, name):
    return os.path.join(root, "DEBIAN", name)


# dpkg's upgrade order: old prerm upgrade NEW, (unpack), new postinst configure OLD
def upgrade(root):
    return [(script(root, "prerm"), "upgrade", "0.1.1"),
            (script(root, "postinst"), "configure", "0.1.0")]


def test_an_upgrade_restarts_the_units_that_ran(root, tmp_path):
    units = units_dir(tmp_path, enabled=UNITS, active=UNITS)
    results, events = run_with_systemd(tmp_path, upgrade(root), units)
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert active(units) == set(UNITS)
    assert sorted(events) == sorted("restart " + u for u in UNITS), events
    assert not [e for e in events if e.startswith("stop")]


def test_an_upgrade_from_a_prerm_that_stopped_them_starts_the_enabled_ones_again(root, tmp_path):
    """0.1.0's prerm stopped every unit on upgrade; the new postinst brings the enabled ones
    back (and only those)."""
    units = units_dir(tmp_path, enabled=UNITS[:2], active=())
    results, events = run_with_systemd(tmp_path, [upgrade(root)[1]], units)
    assert results[0].returncode == 0, results[0].stderr
    assert active(units) == set(UNITS[:2]), events


def test_an_upgrade_leaves_a_workstation_with_no_units_alone(root, tmp_path):
    units = units_dir(tmp_path)  # installed, never enabled: `snakepit up` is what runs
    results, events = run_with_systemd(tmp_path, upgrade(root), units)
    assert all(r.returncode == 0 for r in results)
    assert events == [] and active(units) == set()


def test_a_unit_started_by_hand_though_disabled_is_restarted_too(root, tmp_path):
    units = units_dir(tmp_path, enabled=(), active=UNITS[1:2])
    results, events = run_with_systemd(tmp_path, upgrade(root), units)
    assert all(r.returncode == 0 for r in results)
    assert events == ["restart " + UNITS[1]] and active(units) == {UNITS[1]}


@pytest.mark.skipif(not os.path.exists("/usr/sbin/policy-rc.d"),
                    reason="no policy-rc.d to stand in for on this machine")
def test_an_upgrade_honours_policy_rc_d(root, tmp_path):
    """A chroot or image build forbids starting services: nothing is restarted."""
    units = units_dir(tmp_path, enabled=UNITS, active=UNITS)
    results, events = run_with_systemd(tmp_path, upgrade(root), units, policy_rc=101)
    assert all(r.returncode == 0 for r in results)
    assert events == [] and active(units) == set(UNITS)


def test_a_removal_stops_every_unit(root, tmp_path):
    units = units_dir(tmp_path, enabled=UNITS, active=UNITS)
    results, events = run_with_systemd(tmp_path, [(script(root, "prerm"), "remove")], units)
    assert results[0].returncode == 0
    assert active(units) == set() and sorted(events) == sorted("stop " + u for u in UNITS)
