"""tests/package/pkglib.py — running the package's maintainer scripts the way dpkg does, with
stand-ins for the system commands they call (every call logged), and, for upgrades, the real
deb-systemd-invoke in front of a stand-in systemctl that keeps each unit's state in files.

Kept out of conftest.py so that tests import it by name."""
import os
import re
import subprocess

STUBS = {  # what each system command the scripts call answers; every call is logged
    "adduser": "exit 0", "systemctl": "exit 0", "deb-systemd-invoke": "exit 0",
    "deb-systemd-helper": "exit 0",
    "getent": 'exit "${GETENT_RC:-2}"',
    "dpkg-statoverride": 'case "$1" in --list) exit "${LISTED_RC:-1}";; esac; exit 0',
}

# systemctl as deb-systemd-invoke uses it, with each unit's state in $UNITS:
# UNIT.enabled and UNIT.active exist or not; what changed is appended to $UNITS/events
FAKE_SYSTEMCTL = r'''#!/bin/sh
echo "systemctl $*" >> "$CALLS"
cmd=""; units=""
for a in "$@"; do
    case "$a" in
    --*) ;;
    *) if [ -z "$cmd" ]; then cmd=$a; else units="$units $a"; fi ;;
    esac
done
case "$cmd" in
is-enabled) for u in $units; do
        if [ -e "$UNITS/$u.enabled" ]; then echo enabled; else echo disabled; exit 1; fi
    done ;;
is-active) for u in $units; do [ -e "$UNITS/$u.active" ] || exit 3; done ;;
start|restart) for u in $units; do touch "$UNITS/$u.active"; echo "$cmd $u" >> "$UNITS/events"; done ;;
try-restart) for u in $units; do
        [ -e "$UNITS/$u.active" ] && echo "restart $u" >> "$UNITS/events"; done ;;
stop) for u in $units; do rm -f "$UNITS/$u.active"; echo "stop $u" >> "$UNITS/events"; done ;;
daemon-reload) ;;
*) echo "fake systemctl: $cmd?" >&2; exit 1 ;;
esac
exit 0
'''

UNITS = ("snakepit-broker.service", "snakepit-executor.service", "snakepit-mcp.service")


def _stubs(tmp_path, names):
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    for name in names:
        p = stubs / name
        p.write_text('#!/bin/sh\necho "%s $*" >> %s\n%s\n' % (name, log, STUBS[name]))
        p.chmod(0o755)
    return stubs, log


def _env(stubs, **env):
    e = dict(os.environ, PATH="%s:%s" % (stubs, os.environ["PATH"]), **env)
    e.pop("DPKG_ROOT", None)
    return e


def _systemd(command, policy=None):
    """command inside a mount namespace where /run/systemd/system exists (systemd "runs"),
    and /usr/sbin/policy-rc.d is the script at policy when given."""
    setup = "mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system"
    if policy:
        setup += " && mount --bind %s /usr/sbin/policy-rc.d" % policy
    return ["unshare", "-m", "sh", "-c", setup + ' && exec "$@"', "sh", *command]


def run_script(root, tmp_path, script, *args, systemd=False, **env):
    """One maintainer script of the unpacked package, every system command stubbed: (result,
    the calls made)."""
    stubs, log = _stubs(tmp_path, STUBS)
    command = ["sh", "-e", os.path.join(root, "DEBIAN", script), *args]
    if systemd:
        command = _systemd(command)
    r = subprocess.run(command, env=_env(stubs, **env), capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return r, calls


def units_dir(tmp_path, enabled=(), active=()):
    d = tmp_path / "units"
    d.mkdir(exist_ok=True)
    for u in UNITS:
        for state, which in (("enabled", enabled), ("active", active)):
            f = d / ("%s.%s" % (u, state))
            if u in which:
                f.touch()
            else:
                f.unlink(missing_ok=True)
    (d / "events").write_text("")
    return d


def run_with_systemd(tmp_path, scripts, units, policy_rc=0):
    """Runs each (script path, args...) in order as dpkg would on this machine with systemd,
    through the real deb-systemd-invoke and the stand-in systemctl. policy_rc: what
    policy-rc.d answers (0: run, 101: do not). Returns (results, the units' events)."""
    stubs, log = _stubs(tmp_path, [n for n in STUBS if n not in ("systemctl", "deb-systemd-invoke")])
    fake = stubs / "systemctl"
    fake.write_text(FAKE_SYSTEMCTL)
    fake.chmod(0o755)
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit %d\n" % policy_rc)
    policy.chmod(0o755)
    bind = str(policy) if os.path.exists("/usr/sbin/policy-rc.d") else None
    env = _env(stubs, UNITS=str(units), CALLS=str(tmp_path / "systemctl-calls"), GETENT_RC="0",
               LISTED_RC="0")
    results = []
    for script, *args in scripts:
        results.append(subprocess.run(_systemd(["sh", "-e", script, *args], bind), env=env,
                                      capture_output=True, text=True, timeout=60))
    events = [l for l in (units / "events").read_text().splitlines() if l]
    return results, events


def active(units):
    return {u for u in UNITS if (units / ("%s.active" % u)).exists()}


def names(field):
    """Package names of a Depends-style field."""
    return {re.split(r"[\s(]", alt.strip())[0] for part in field.split(",")
            for alt in part.split("|") if alt.strip()}
