"""tests/images/imagelib.py — podman for the image suite: building on the Debian 12 root
deploy/images/make-root.sh makes (no registry), and running a farm of containers on a network
of its own. Every container, network and volume made here is removed by the id podman gave
it, never by name pattern.

This machine's cgroups (a v1/v2 hybrid) are refused by crun, and its hard limit on open files
is below podman's default: every build and run takes RUNTIME."""
import json
import os
import subprocess
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNTIME = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
# what the executor's sandbox needs of a container (deploy/README.md, "Containers")
SANDBOX = ["--user", "0:0", "--cap-drop", "ALL", "--cap-add", "SETUID", "--cap-add", "SETGID",
           "--cap-add", "SETFCAP", "--security-opt", "no-new-privileges",
           "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined"]


def podman(*args, timeout=1800, check=True):
    r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("podman %s: %s" % (" ".join(args[:3]), (r.stderr or r.stdout)[-3000:]))
    return r


def image_exists(name):
    return podman("image", "exists", name, check=False).returncode == 0


def build(containerfile, tag, base, target=None):
    args = ["build", *RUNTIME, "--network", "host", "-f", os.path.join(ROOT, containerfile),
            "--build-arg", "BASE=" + base, "-t", tag]
    if target:
        args += ["--target", target]
    podman(*args, ROOT, timeout=3600)
    return tag


class ContainerFarm:
    """Containers on a network of their own, each reachable by its alias."""

    def __init__(self, tag):
        self.tag = tag
        self.ids = {}   # alias -> container id
        self.volumes = []
        self.network = podman("network", "create", "sp-%s-%d" % (tag, os.getpid())).stdout.strip()

    def volume(self):
        v = podman("volume", "create").stdout.strip()
        self.volumes.append(v)
        return v

    def run(self, alias, image, args=(), flags=(), publish=()):
        cmd = ["run", "-d", *RUNTIME, "--network", self.network, "--network-alias", alias,
               "--name", "sp-%s-%d-%s" % (self.tag, os.getpid(), alias), *flags]
        for port in publish:
            cmd += ["-p", "127.0.0.1::%d" % port]
        self.ids[alias] = podman(*cmd, image, *args).stdout.strip()
        return self.ids[alias]

    def port(self, alias, port):
        out = podman("port", self.ids[alias], str(port)).stdout.strip()
        return int(out.splitlines()[0].rsplit(":", 1)[1])

    def exec(self, alias, *cmd, check=True, timeout=120):
        return podman("exec", self.ids[alias], *cmd, check=check, timeout=timeout)

    def logs(self, alias):
        return podman("logs", self.ids[alias], check=False).stdout + \
            podman("logs", self.ids[alias], check=False).stderr

    def exec_ok(self, alias, *cmd, timeout=60):
        """exec until it succeeds: the network's DNS (aardvark-dns) may not answer for a moment
        after a container joins it. Its stdout."""
        out = []
        wait_for("%s: %s" % (alias, " ".join(cmd[:3])),
                 lambda: out.append(self.exec(alias, *cmd, check=False)) or out[-1].returncode == 0,
                 timeout=timeout)
        return out[-1].stdout

    def running(self, alias):
        out = podman("inspect", "--format", "{{.State.Running}}", self.ids[alias], check=False)
        return out.stdout.strip() == "true"

    def stop(self, alias, grace=75):
        podman("stop", "-t", str(grace), self.ids[alias], timeout=grace + 60)

    def close(self):
        for cid in self.ids.values():
            podman("rm", "-f", "-t", "5", cid, check=False, timeout=120)
        for v in self.volumes:
            podman("volume", "rm", "-f", v, check=False)
        podman("network", "rm", "-f", self.network, check=False)


def wait_for(what, check, timeout=240, every=1.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            if check():
                return
        except Exception as e:  # not up yet: connection refused, reset, bad status
            last = e
        time.sleep(every)
    raise AssertionError("%s: not within %d s (%s)" % (what, timeout, last))


def metric(url, name, **labels):
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + ("{" + want + "}" if want else " ")):
            return float(line.rsplit(" ", 1)[1])
    return None


def status_of(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def inspect(image):
    return json.loads(podman("image", "inspect", image).stdout)[0]
