# executor-node/node/envbuild.py — builds one dependency environment (issue 14), run by the node
# (envs.c) as `/usr/bin/python3 -I -c <this file> ...`, outside any sandbox and never by tenant
# code: a venv that sees the system's packages (python.data_science counts them as installed;
# python.basic does not, --ignore-installed), filled by Debian's pip from the operator's package
# source only (--no-index --find-links DIR, or --index-url URL), with a scrubbed environment
# and no configuration file of the operator's.
#
# Each distinct resolved set is one directory, ROOT/<profile>/<sha256 of the set>, made
# read-only once built; a requested set maps to it through ROOT/<profile>/requests/<key>, so
# later calls (and later nodes on the same disk) skip pip. What it prints, one line each:
#   STATUS ok | base | error     base: the profile's own packages already satisfy the set
#   SITE <site-packages>         ok: the directory to put on the zygote's sys.path
#   MODULES a,b                  ok: the top-level modules the set adds (imported, allowed)
#   DISTS name==version,...      ok: what was installed
#   ERROR <one line>             error: the requirement, what pip said, what the source has
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


SOURCE, ROOT, PROFILE, KEY = arg("--source"), arg("--root"), arg("--profile"), arg("--key")
SYSTEM_SITE = arg("--system-site") == "1"
TIMEOUT = int(arg("--timeout", "300"))
REQS = sys.argv[sys.argv.index("--") + 1:]


def env():
    return {"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir(), "LANG": "C.UTF-8",
            "PIP_CONFIG_FILE": "/dev/null", "PYTHONNOUSERSITE": "1"}


def available():
    """What the package source offers, for the error message: name version, … (a directory's
    wheels and sdists; an index cannot be listed)."""
    if re.match(r"^[a-z]+://", SOURCE or ""):
        return "see the index at " + SOURCE
    found = {}
    for name in sorted(os.listdir(SOURCE)):
        m = re.match(r"^([A-Za-z0-9_.]+?)-(\d[^-]*?)(-[^-]+-[^-]+-[^-]+\.whl|\.tar\.gz|\.zip)$", name)
        if m:
            found.setdefault(m.group(1).replace("_", "-").lower(), []).append(m.group(2))
    if not found:
        return "nothing"
    return "; ".join("%s %s" % (n, ", ".join(v)) for n, v in sorted(found.items()))


def fail(message):
    print("STATUS error")
    print("ERROR " + " ".join(message.split()))
    sys.exit(0)


def pip_error(stderr):
    keep = [l.strip() for l in stderr.splitlines()
            if l.startswith("ERROR:") or "depends on" in l or "The user requested" in l]
    return " ".join(keep)[:1500] or stderr.strip()[-1500:]


def top_level(site, dist_info):
    """The importable names a distribution adds: its top_level.txt, else its RECORD's first
    path components."""
    path = os.path.join(site, dist_info)
    names = set()
    if os.path.exists(os.path.join(path, "top_level.txt")):
        names = {l.strip() for l in open(os.path.join(path, "top_level.txt")) if l.strip()}
    elif os.path.exists(os.path.join(path, "RECORD")):
        for line in open(os.path.join(path, "RECORD")):
            first = line.split(",")[0].split("/")[0]
            if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__", ""):
                continue
            names.add(first[:-3] if first.endswith(".py") else first)
    return {n for n in names if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", n)}


def read_only(path):
    """Files 0444, directories 0555 — never through a symlink: the venv's bin/python points at
    the system's interpreter, which must keep its mode."""
    for d, dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                os.chmod(p, 0o444)
        os.chmod(d, 0o555)


def main():
    base = os.path.join(ROOT, PROFILE)
    os.makedirs(os.path.join(base, "requests"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="build-", dir=base)
    try:
        venv = os.path.join(work, "env")
        # the venv sees the system's packages either way: pip itself is one of them
        subprocess.run([PY, "-m", "venv", "--without-pip", "--system-site-packages", venv],
                       env=env(), check=True, timeout=TIMEOUT, capture_output=True)
        source = (["--index-url", SOURCE] if re.match(r"^[a-z]+://", SOURCE)
                  else ["--no-index", "--find-links", SOURCE])
        report = os.path.join(work, "report.json")
        cmd = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--isolated",
               "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--no-compile",
               "--root-user-action=ignore", "--only-binary=:all:", "--report", report] + source
        if not SYSTEM_SITE:  # the profile sees none of the system's packages
            cmd.append("--ignore-installed")
        p = subprocess.run(cmd + ["--"] + REQS, env=env(), timeout=TIMEOUT, capture_output=True,
                           text=True)
        if p.returncode != 0:
            fail("cannot resolve %s from the package source: %s Available there: %s."
                 % (", ".join(REQS), pip_error(p.stdout + "\n" + p.stderr), available()))
        installed = json.load(open(report)).get("install", [])
        if not installed:
            print("STATUS base")
            return
        resolved = sorted("%s==%s %s" % (i["metadata"]["name"].lower(), i["metadata"]["version"],
                                         json.dumps(i.get("download_info", {}).get("archive_info", {}),
                                                    sort_keys=True)) for i in installed)
        digest = hashlib.sha256((PROFILE + "\n" + "\n".join(resolved)).encode()).hexdigest()[:24]
        final = os.path.join(base, digest)
        site = os.path.join(final, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        if not os.path.isdir(final):
            read_only(venv)
            try:
                os.rename(venv, final)
            except OSError:  # another requested set resolved to the same one meanwhile
                if not os.path.isdir(final):
                    raise
        modules = set()
        for name in os.listdir(site):
            if name.endswith(".dist-info"):
                modules |= top_level(site, name)
        dists = ",".join("%s==%s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in installed)
        answer = "STATUS ok\nSITE %s\nMODULES %s\nDISTS %s\n" % (site, ",".join(sorted(modules)), dists)
        if KEY:  # the requested set's answer, for the next call and the next node start
            with open(os.path.join(base, "requests", KEY + ".tmp"), "w") as f:
                f.write(answer)
            os.rename(os.path.join(base, "requests", KEY + ".tmp"), os.path.join(base, "requests", KEY))
        sys.stdout.write(answer)
    except subprocess.TimeoutExpired:
        fail("building the environment for %s took longer than %d s" % (", ".join(REQS), TIMEOUT))
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        fail("building the environment for %s failed: %s: %s" % (", ".join(REQS), type(e).__name__, e))
    finally:
        if os.path.isdir(work):
            for d, dirs, files in os.walk(work):  # a read-only leftover must still go
                if not os.path.islink(d):
                    os.chmod(d, 0o755)
            shutil.rmtree(work, ignore_errors=True)


main()
