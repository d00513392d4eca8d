# executor-node/buildbox/envbuild.py — builds one dependency environment, as untrusted work: the
# build box (buildbox.c) runs it as `/usr/bin/python3 -I -c <this file> ...` in namespaces of its
# own, as an unprivileged uid with no capabilities, under seccomp, with a filesystem that holds
# the system's /usr, the package source at /source (read-only) and its own build directory at
# /build, and nothing else of the host's. Its working directory is an empty read-only one, so a
# requirement could not name a file there even if one slipped past the grammar (common/pep508.h).
#
# It makes a venv at /build/env that sees the system's packages (python.data_science counts
# them as installed; python.basic does not, --ignore-installed) and fills it with Debian's pip
# from the package source only (--no-index --find-links /source, or --index-url URL), wheels
# only unless the operator allows source builds, with a scrubbed environment and no
# configuration file. It never names a host path: what it prints is read by the build box,
# which makes the result read-only and root's, moves it into place and answers the node.
# One line each:
#   STATUS ok | base | error     base: the profile's own packages already satisfy the set
#   DIGEST <hex>                 ok: sha256 of the resolved set (the environment's name)
#   SITE <path>                  ok: site-packages, relative to /build/env
#   MODULES a,b                  ok: the top-level modules the set adds (allowed, job-imported)
#   DISTS name==version,...      ok: what was installed
#   ERROR <one line>             error: the requirement, what pip said, what the source has
import hashlib
import json
import os
import re
import subprocess
import sys

PY = "/usr/bin/python3"
BUILD = "/build"


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


SOURCE, PROFILE = arg("--source"), arg("--profile")
SYSTEM_SITE = arg("--system-site") == "1"
FROM_SOURCE = arg("--from-source") == "1"
TIMEOUT = int(arg("--timeout", "300"))
PRELOADED = set(filter(None, (arg("--preloaded") or "").split(",")))
REQS = sys.argv[sys.argv.index("--") + 1:]
IS_INDEX = re.match(r"^[a-z]+://", SOURCE or "") is not None


def env():
    return {"PATH": "/usr/bin:/bin", "HOME": BUILD + "/home", "TMPDIR": BUILD + "/tmp",
            "LANG": "C.UTF-8", "PIP_CONFIG_FILE": "/dev/null", "PYTHONNOUSERSITE": "1"}


def available():
    """What the package source offers, for the error message: name version, … (a directory's
    wheels and sdists; an index cannot be listed)."""
    if IS_INDEX:
        return "see the index at " + SOURCE
    found = {}
    for name in sorted(os.listdir("/source")):
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
    text = " ".join(keep)[:1500] or stderr.strip()[-1500:]
    # the box's own paths mean nothing to the caller
    return text.replace("/source/", "").replace("/source", "the package source").replace(BUILD + "/", "")


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


def main():
    if not IS_INDEX and not os.access("/source", os.R_OK | os.X_OK):
        fail("the executor's package source cannot be read by the unprivileged user dependency "
             "builds run as: its operator must make the directory and its files readable to all "
             "(chmod -R a+rX)")
    os.makedirs(BUILD + "/home", exist_ok=True)
    os.makedirs(BUILD + "/tmp", exist_ok=True)
    venv = BUILD + "/env"
    try:
        # the venv sees the system's packages either way: pip itself is one of them
        subprocess.run([PY, "-m", "venv", "--without-pip", "--system-site-packages", venv],
                       env=env(), check=True, timeout=TIMEOUT, capture_output=True)
        source = ["--index-url", SOURCE] if IS_INDEX else ["--no-index", "--find-links", "/source"]
        report = BUILD + "/report.json"
        cmd = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--isolated",
               "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--no-compile",
               "--root-user-action=ignore", "--report", report] + source
        if not FROM_SOURCE:  # a source build runs the package's own setup code
            cmd.append("--only-binary=:all:")
        else:  # with the system's setuptools and wheel: the source rarely has them to install
            cmd.append("--no-build-isolation")
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
        site = os.path.join("lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        modules = set()
        for name in os.listdir(os.path.join(venv, site)):
            if name.endswith(".dist-info"):
                modules |= top_level(os.path.join(venv, site), name)
        clash = sorted(modules & PRELOADED)
        if clash:  # the zygote's own copy would win: the job would not get what it asked for
            fail("%s asks for a version of %s other than the one %s has loaded in every job "
                 "(see get_sandbox_info); ask for the version the profile has, or use a profile "
                 "without it" % (", ".join(REQS), ", ".join(clash), PROFILE))
        resolved = sorted("%s==%s %s" % (i["metadata"]["name"].lower(), i["metadata"]["version"],
                                         json.dumps(i.get("download_info", {}).get("archive_info", {}),
                                                    sort_keys=True)) for i in installed)
        digest = hashlib.sha256((PROFILE + "\n" + "\n".join(resolved)).encode()).hexdigest()[:24]
        dists = ",".join("%s==%s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in installed)
        sys.stdout.write("STATUS ok\nDIGEST %s\nSITE %s\nMODULES %s\nDISTS %s\n"
                         % (digest, site, ",".join(sorted(modules)), dists))
    except subprocess.TimeoutExpired:
        fail("building the environment for %s took longer than %d s" % (", ".join(REQS), TIMEOUT))
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        fail("building the environment for %s failed: %s" % (", ".join(REQS), type(e).__name__))


main()
