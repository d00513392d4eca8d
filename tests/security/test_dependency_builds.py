"""Dependency builds as untrusted work. A requirement is a plain PEP 508 name (never a file, a
path, a URL or an option); pip never looks at the executor's working directory; a build runs in
a jail of its own (unprivileged uid, its own namespaces and filesystem, seccomp); the code of a
dependency runs only in a job's sandbox, never in the zygote; and no answer names a host path.
Each attack below worked before these walls existed."""
import io
import os
import shutil
import sys
import tarfile
import tempfile
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Executor  # noqa: E402
import wheels  # noqa: E402


def _sdist(outdir, name, setup_py):
    """A hand-made source distribution: PKG-INFO and setup.py, nothing else."""
    path = os.path.join(outdir, "%s-1.0.tar.gz" % name)
    with tarfile.open(path, "w:gz") as tar:
        for member, text in (("PKG-INFO", "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name),
                             ("setup.py", setup_py)):
            data = text.encode()
            info = tarfile.TarInfo("%s-1.0/%s" % (name, member))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def world():
    top = tempfile.mkdtemp(prefix="sp-depattack-")
    os.chmod(top, 0o755)
    w = {"top": top, "source": wheels.tiny_source(os.path.join(top, "source")),
         "cwd": os.path.join(top, "cwd"), "envs": os.path.join(top, "envs"),
         "host_mark": os.path.join(top, "cwd", "BUILT-ON-THE-HOST")}
    os.makedirs(w["cwd"])
    # in the executor's working directory: an sdist and a wheel an attacker hopes pip will find
    _sdist(w["cwd"], "evil", "open(%r, 'w').write('setup.py ran')\n"
                             "from setuptools import setup\nsetup(name='evil', version='1.0')\n"
           % w["host_mark"])
    wheels.build(w["cwd"], "evil", "1.0", {"evil.py": "open(%r, 'w').write('imported')\n" % w["host_mark"]})
    # in the package source: a wheel whose import tries to write on the host, and an sdist
    # whose setup.py records what its build could see and do
    w["tattle_mark"] = os.path.join(top, "TATTLE")
    wheels.build(w["source"], "tattle", "1.0", {"tattle.py": textwrap.dedent("""\
        try:
            open(%r, "w").write("imported where the host is writable")
            WROTE = True
        except OSError:
            WROTE = False
        """ % w["tattle_mark"])})
    _sdist(w["source"], "jailprobe", textwrap.dedent("""\
        import ctypes, os, socket
        facts = {"uid": os.getuid(), "cwd_host_mark": os.path.exists(%r),
                 "shadow": os.path.exists("/etc/shadow"), "home": os.path.exists("/root"),
                 "envs_dir": os.path.exists(%r)}
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            facts["inet"] = "opened"
        except OSError as e:
            facts["inet"] = e.errno
        libc = ctypes.CDLL(None, use_errno=True)
        facts["ptrace"] = libc.ptrace(0, 0, 0, 0)  # PTRACE_TRACEME: -1 when refused
        try:
            open(%r, "w").write("setup.py ran")
            facts["wrote_host"] = True
        except OSError:
            facts["wrote_host"] = False
        open("jailprobe.py", "w").write("FACTS = %%r\\n" %% facts)
        from setuptools import setup
        setup(name="jailprobe", version="1.0", py_modules=["jailprobe"])
        """ % (w["host_mark"], w["envs"], w["host_mark"])))
    yield w
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def ex(world):
    e = Executor(slots=2, cwd=world["cwd"], extra=["--packages", world["source"], "--envs-dir", world["envs"]])
    yield e
    e.close()


def _refused(r):
    assert r["status"] == "error" and r["error"]["type"] == "DependencyError", (r["status"], r.get("error"))
    return r["error"]["message"]


def _no_host_path(text, world):
    for path in (world["top"], world["cwd"], world["source"], world["envs"]):
        assert path not in text, text


@pytest.mark.parametrize("req", ["evil-1.0.tar.gz", "evil-1.0-py3-none-any.whl", "./evil-1.0.tar.gz",
                                 "evil @ file:///tmp/evil-1.0.tar.gz", "-e .", "--find-links=."])
def test_a_requirement_naming_a_file_url_or_option_is_refused_by_the_node(ex, world, req):
    message = _refused(ex.run("print('ran')", dependencies=[req], timeout=120))
    assert "PEP 508" in message
    assert not os.path.exists(world["host_mark"])


def test_a_name_never_resolves_against_the_executors_working_directory(ex, world):
    message = _refused(ex.run("print('ran')", dependencies=["evil"], timeout=120))
    assert "evil" in message and "No matching distribution" in message
    assert not os.path.exists(world["host_mark"])
    _no_host_path(message, world)


def test_an_unresolvable_set_names_no_host_path(ex, world):
    message = _refused(ex.run("print('ran')", dependencies=["tinydep", "tinypkg>=2"], timeout=120))
    assert "tinypkg" in message
    _no_host_path(message, world)


def test_dependency_code_runs_only_inside_the_job(ex, world):
    """The zygote of an environment never imports it: tattle's import-time write would have
    landed on the host, as root, before the zygote sealed its filesystem."""
    r = ex.run("import tattle\nprint(tattle.WROTE, tattle.__file__)", dependencies=["tattle"], timeout=120)
    assert r["status"] == "ok", r.get("error")
    wrote, where = r["stdout"].split()
    assert wrote == "False" and not os.path.exists(world["tattle_mark"])
    assert where == "/deps/tattle.py"  # a neutral path, not the host's state directory
    _no_host_path(r["stdout"], world)


def test_without_the_operators_leave_no_source_distribution_is_built(ex, world):
    message = _refused(ex.run("print('ran')", dependencies=["jailprobe"], timeout=120))
    assert "jailprobe" in message
    assert not os.path.exists(world["host_mark"])


def test_a_source_build_the_operator_allows_runs_jailed(world):
    envs = os.path.join(world["top"], "envs-src")
    e = Executor(slots=1, cwd=world["cwd"],
                 extra=["--packages", world["source"], "--envs-dir", envs, "--build-from-source"])
    try:
        r = e.run("import jailprobe\nprint(jailprobe.FACTS)", dependencies=["jailprobe"], timeout=180)
        assert r["status"] == "ok", (r.get("error"), e.output()[-3000:])
        facts = eval(r["stdout"])  # noqa: S307 — our own module's repr of a dict
        assert facts["uid"] != 0                      # not root
        assert facts["shadow"] is False and facts["home"] is False  # the host's files are not there
        assert facts["envs_dir"] is False and facts["cwd_host_mark"] is False
        assert facts["inet"] != "opened"              # no network without an index
        assert facts["ptrace"] == -1                  # seccomp
        assert facts["wrote_host"] is False and not os.path.exists(world["host_mark"])
        # and what it built is root's and read-only on the host
        built = [os.path.join(d, f) for d, _, fs in os.walk(envs) for f in fs if f == "jailprobe.py"]
        assert built, os.listdir(envs)
        for path in built:
            st = os.stat(path)
            assert st.st_uid == 0 and not st.st_mode & 0o222
    finally:
        e.close()
