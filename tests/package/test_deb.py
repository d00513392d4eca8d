"""The Debian package `make deb` builds: what it holds, what it depends on, its maintainer
scripts (run with stand-ins for the system commands they call), lintian, dpkg accepting it,
and a farm started by `snakepit up` from the package's own /usr/bin."""
import glob
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import SRC
from pkglib import names, run_script

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402  (below the ephemeral range)

BINARIES = ("snakepit", "snakepit-broker", "snakepit-executor", "snakepit-mcp", "snakepit-zygote",
            "snakepit-egress")
UNITS = ("snakepit-broker.service", "snakepit-executor.service", "snakepit-mcp.service")
CONFS = ("broker.conf", "executor.conf", "mcp.conf")


# ---- control -------------------------------------------------------------------------------

def test_control_names_the_package(control):
    assert control["Package"] == "snakepit"
    assert re.match(r"^\d+\.\d+\.\d+$", control["Version"])
    assert control["Architecture"] == subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    assert re.match(r"^.+ <[^@\s]+@[^>\s]+>$", control["Maintainer"])
    assert int(control["Installed-Size"]) > 0
    assert control["Description"].strip()


def test_depends_on_the_runtime_packages(control):
    depends = names(control["Depends"])
    for pkg in ("libc6", "libzmq5", "libhiredis0.14", "libpython3.11", "libseccomp2",
                "libmicrohttpd12", "libjansson4", "libsodium23", "libgnutls30", "python3.11",
                "redis-server",
                "tzdata", "adduser"):
        assert pkg in depends, pkg
    assert {"python3-numpy", "python3-pandas", "python3-scipy", "python3-matplotlib",
            "python3-sympy"} <= names(control["Recommends"])


def _owner(path):
    for p in (os.path.realpath(path), path):
        out = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True).stdout
        if out:
            return out.split(":")[0]
    return None


def test_every_library_a_binary_loads_is_a_dependency(root, control):
    depends = names(control["Depends"])
    ldconfig = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for b in BINARIES:
        dyn = subprocess.run(["readelf", "-d", os.path.join(root, "usr/bin", b)],
                             capture_output=True, text=True, check=True).stdout
        for soname in re.findall(r"\(NEEDED\).*\[(.+)\]", dyn):
            m = re.search(r"\s%s \(.*\) => (\S+)" % re.escape(soname), ldconfig)
            assert m, soname
            assert _owner(m.group(1)) in depends, (b, soname, _owner(m.group(1)))


# ---- files ---------------------------------------------------------------------------------

def test_binaries_are_in_usr_bin_hardened_and_stripped(root):
    for b in BINARIES:
        path = os.path.join(root, "usr/bin", b)
        assert os.access(path, os.X_OK), b
        dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
        assert "BIND_NOW" in dyn or "NOW" in dyn, b  # full RELRO
        head = subprocess.run(["readelf", "-h", path], capture_output=True, text=True).stdout
        assert "DYN" in head, b  # PIE
        syms = subprocess.run(["readelf", "-S", path], capture_output=True, text=True).stdout
        assert ".symtab" not in syms and ".debug_info" not in syms, b
    assert not glob.glob(os.path.join(root, "usr/local/*"))


def test_units_run_the_packaged_binaries(root):
    for unit in UNITS:
        with open(os.path.join(root, "lib/systemd/system", unit)) as f:
            packaged = f.read()
        with open(os.path.join(SRC, "deploy/systemd", unit)) as f:
            source = f.read()
        assert packaged == source.replace("/usr/local/bin/", "/usr/bin/"), unit
        for exe in re.findall(r"^ExecStart=(\S+)", packaged, re.M):
            assert exe.startswith("/usr/bin/") and os.access(root + exe, os.X_OK), exe
            conf = re.search(r"--config (\S+)", packaged).group(1)
            assert os.path.isfile(root + conf), conf


def test_configuration_is_the_example_and_kept_as_conffiles(root):
    with open(os.path.join(root, "DEBIAN/conffiles")) as f:
        conffiles = f.read().split()
    assert conffiles == ["/etc/snakepit/" + c for c in CONFS]
    for c in CONFS:
        with open(os.path.join(root, "etc/snakepit", c)) as f, \
                open(os.path.join(SRC, "deploy/config", c)) as g:
            assert f.read() == g.read(), c


def _man(root, name):
    with gzip.open(os.path.join(root, "usr/share/man/man1", name + ".1.gz"), "rt") as f:
        return f.read()


@pytest.mark.parametrize("binary", [b for b in BINARIES if b not in ("snakepit-zygote",
                                                                      "snakepit-egress")])
def test_man_pages_come_from_each_help(root, binary):
    page = _man(root, binary)
    assert page.startswith(".\\\"") or page.startswith(".TH"), page[:80]
    assert ".SH NAME" in page and ".SH SYNOPSIS" in page.upper() or ".SH DESCRIPTION" in page
    helps = [subprocess.run([os.path.join(root, "usr/bin", binary), "--help"],
                            capture_output=True, text=True).stdout]
    if binary == "snakepit":  # and each command's own --help
        helps += [subprocess.run([os.path.join(root, "usr/bin/snakepit"), cmd, "--help"],
                                 capture_output=True, text=True).stdout
                  for cmd in ("up", "down", "mcp", "run", "tenant", "status", "usage", "backup",
                              "restore", "keygen")]
    flat = page.replace("\\-", "-").replace("\\e", "\\")
    for text in helps:
        for flag in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text)):
            assert flag in flat, (binary, flag)


def test_the_zygote_has_a_man_page_and_the_docs_are_there(root):
    assert "snakepit-executor" in _man(root, "snakepit-zygote")
    assert "snakepit-executor" in _man(root, "snakepit-egress")
    assert os.path.isfile(os.path.join(root, "usr/share/doc/snakepit/copyright"))
    with gzip.open(os.path.join(root, "usr/share/doc/snakepit/changelog.gz"), "rt") as f:
        assert f.read().startswith("snakepit (")


def test_md5sums_cover_every_file(root):
    with open(os.path.join(root, "DEBIAN/md5sums")) as f:
        listed = {line.split(None, 1)[1].strip() for line in f}
    files = {os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root)
             for n in ns if not os.path.relpath(d, root).startswith("DEBIAN")}
    assert listed == files


# ---- maintainer scripts ----------------------------------------------------------------------

@pytest.mark.parametrize("script", ["postinst", "prerm", "postrm"])
def test_maintainer_scripts_are_valid_posix_sh(root, script):
    path = os.path.join(root, "DEBIAN", script)
    assert os.access(path, os.X_OK)
    assert subprocess.run(["sh", "-n", path]).returncode == 0
    if os.path.exists("/bin/dash"):
        assert subprocess.run(["dash", "-n", path]).returncode == 0


def test_postinst_creates_the_user_and_guards_the_configuration(root, tmp_path):
    r, calls = run_script(root, tmp_path, "postinst", "configure")
    assert r.returncode == 0, r.stderr
    assert "adduser --system --group --no-create-home --home /nonexistent --quiet snakepit" in calls
    for path, mode in (("/etc/snakepit", "0750"), ("/etc/snakepit/mcp.conf", "0640"),
                       ("/etc/snakepit/broker.conf", "0640"),
                       ("/etc/snakepit/executor.conf", "0640")):
        assert "dpkg-statoverride --update --add root snakepit %s %s" % (mode, path) in calls
    assert not any(c.startswith("systemctl") for c in calls)  # no systemd running


def test_postinst_again_changes_nothing_already_done(root, tmp_path):
    r, calls = run_script(root, tmp_path, "postinst", "configure", GETENT_RC="0", LISTED_RC="0")
    assert r.returncode == 0
    assert not any(c.startswith(("adduser", "dpkg-statoverride --update")) for c in calls)


def test_postinst_reloads_systemd_but_enables_nothing(root, tmp_path):
    r, calls = run_script(root, tmp_path, "postinst", "configure", systemd=True)
    assert r.returncode == 0, r.stderr
    assert "systemctl --system daemon-reload" in calls
    assert not any("enable" in c or "start" in c for c in calls), calls


def test_prerm_stops_the_units_on_removal_only(root, tmp_path):
    for action in ("remove", "deconfigure"):
        r, calls = run_script(root, tmp_path, "prerm", action, systemd=True)
        assert r.returncode == 0, r.stderr
        assert calls == ["deb-systemd-invoke stop snakepit-mcp.service snakepit-executor.service "
                         "snakepit-broker.service"]
    r, calls = run_script(root, tmp_path, "prerm", "remove")
    assert r.returncode == 0 and calls == []
    # an upgrade keeps them serving until postinst restarts them on the new binaries
    r, calls = run_script(root, tmp_path, "prerm", "upgrade", "0.1.1", systemd=True)
    assert r.returncode == 0 and calls == [], calls


def test_postinst_on_upgrade_restarts_the_units(root, tmp_path):
    r, calls = run_script(root, tmp_path, "postinst", "configure", "0.1.0", systemd=True,
                          GETENT_RC="0", LISTED_RC="0")
    assert r.returncode == 0, r.stderr
    assert [c for c in calls if c.startswith(("systemctl", "deb-systemd"))] == [
        "systemctl --system daemon-reload",
        "deb-systemd-invoke restart snakepit-broker.service snakepit-executor.service "
        "snakepit-mcp.service"], calls


def test_postrm_purge_undoes_postinst(root, tmp_path):
    r, calls = run_script(root, tmp_path, "postrm", "purge", systemd=True, LISTED_RC="0")
    assert r.returncode == 0, r.stderr
    for path in ("/etc/snakepit", "/etc/snakepit/mcp.conf"):
        assert "dpkg-statoverride --remove %s" % path in calls
    assert any(c.startswith("deb-systemd-helper purge snakepit-broker.service") for c in calls)
    r, calls = run_script(root, tmp_path, "postrm", "remove")
    assert r.returncode == 0 and not any("statoverride --remove" in c for c in calls)


# ---- dpkg and lintian ---------------------------------------------------------------------------

def test_dpkg_unpacks_it_into_a_throwaway_root(deb, tmp_path):
    admin = tmp_path / "var/lib/dpkg"
    for d in ("info", "updates", "triggers"):
        (admin / d).mkdir(parents=True)
    for f in ("status", "available"):
        (admin / f).write_text("")
    r = subprocess.run(["dpkg", "--root", str(tmp_path), "--force-depends", "--force-not-root",
                        "--unpack", deb], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    status = subprocess.run(["dpkg", "--root", str(tmp_path), "-s", "snakepit"],
                            capture_output=True, text=True).stdout
    assert "Status: install ok unpacked" in status
    for c in CONFS:
        assert "/etc/snakepit/%s " % c in status  # registered as conffiles
    assert os.access(tmp_path / "usr/bin/snakepit", os.X_OK)


def test_lintian_finds_no_error_or_warning(deb):
    r = subprocess.run(["lintian", "--no-tag-display-limit", deb], capture_output=True,
                       text=True, timeout=600)
    problems = [l for l in r.stdout.splitlines() if l[:2] in ("E:", "W:")]
    assert problems == [], "\n".join(problems)


# ---- snakepit up from the package ----------------------------------------------------------------



def test_snakepit_up_from_the_package_serves(root):
    state = tempfile.mkdtemp(prefix="sp-pk-", dir="/tmp")
    snakepit = os.path.join(root, "usr/bin/snakepit")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEPIT_")}
    log = open(os.path.join(state, "up.out"), "w")
    up = subprocess.Popen([snakepit, "up", "--state-dir", state, "--http",
                           "127.0.0.1:%d" % free_port(), "--metrics-port", "0", "--slots", "1",
                           "--profiles", "python.basic"],
                          stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        ready = os.path.join(state, "ready.json")
        deadline = time.time() + 120
        while not os.path.exists(ready) and up.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        with open(os.path.join(state, "up.out")) as f:
            assert os.path.exists(ready), f.read()
        with open(ready) as f:
            info = json.load(f)
        assert info["stdio_command"][0] == snakepit
        # every component runs from the package's /usr/bin (found beside `snakepit`)
        exes = set()
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if os.getsid(int(pid)) == up.pid and int(pid) != up.pid:
                        exes.add(os.path.realpath("/proc/%s/exe" % pid))
                except OSError:
                    pass
        for b in ("snakepit-broker", "snakepit-executor", "snakepit-mcp", "snakepit-zygote",
                  "snakepit-egress"):
            assert os.path.join(root, "usr/bin", b) in exes, (b, exes)
        r = subprocess.run([snakepit, "run", "--state-dir", state, "print(1+1)"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)  # our own session only
            up.wait()
        log.close()
