"""Dependencies: a job's `dependencies` (and its PEP 723 block) resolved by the node
from the operator's package source — here a directory of tiny wheels the test builds — into a
cached, read-only environment with a warm zygote of its own, built once and reused; what cannot
be resolved gets an error naming the requirement and what the source has."""
import os
import shutil
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Executor  # noqa: E402
import wheels  # noqa: E402

DS = "python.data_science"


@pytest.fixture(scope="module")
def source():
    d = tempfile.mkdtemp(prefix="sp-wheels-")
    yield wheels.tiny_source(d)
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def envs_dir():
    d = tempfile.mkdtemp(prefix="sp-envs-")
    yield d
    shutil.rmtree(d)  # root: the environments' read-only modes do not stop it


@pytest.fixture(scope="module")
def ex(source, envs_dir):
    e = Executor(slots=2, profiles="python.basic,python.data_science",
                 extra=["--packages", source, "--envs-dir", envs_dir, "--log-level", "info"])
    yield e
    e.close()


def ok(r):
    assert r["status"] == "ok", (r["status"], r.get("error"), r["stderr"][-1000:])
    return r


def test_a_dependency_set_resolves_runs_and_is_warm_the_second_time(ex):
    python_mode = os.stat("/usr/bin/python3.11").st_mode
    started = time.monotonic()
    r = ok(ex.run("import tinydep\nprint(tinydep.go())", dependencies=["tinydep"], timeout=120))
    first = time.monotonic() - started
    assert r["stdout"] == "tinydep+1.0.0\n"  # tinydep's <2 bound picked tinypkg 1.0.0
    started = time.monotonic()
    r = ok(ex.run("import tinypkg, tinydep\nprint(tinypkg.hello())", dependencies=["tinydep"]))
    second = time.monotonic() - started
    assert r["stdout"] == "hello from tinypkg 1.0.0\n"
    assert ex.output().count("event=env_build ") == 1  # built once, reused
    print("\nfirst call %.3f s, second %.3f s" % (first, second))
    # the builder must never touch what the venv points at
    assert os.stat("/usr/bin/python3.11").st_mode == python_mode


def test_importlib_metadata_sees_the_environments_distributions(ex):
    # the job imports from memory only: the metadata was read by the zygote and is served from
    # there, at the place the job sees the environment (/deps), never by listing a directory
    r = ok(ex.run("import importlib.metadata as md\n"
                  "print(md.version('tinydep'), md.version('tinypkg'))\n"
                  "print(md.distribution('tinydep').locate_file('tinydep').as_posix())\n"
                  "print(md.packages_distributions().get('tinypkg'))\n"
                  "try:\n    md.version('numpy')\nexcept md.PackageNotFoundError:\n"
                  "    print('no numpy here')", dependencies=["tinydep"], timeout=120))
    lines = r["stdout"].splitlines()
    assert lines[0] == "0.1.0 1.0.0"
    assert lines[1].startswith("/deps/") and "envs" not in lines[1]
    assert lines[2] == "['tinypkg']" and lines[3] == "no numpy here"
    assert not r.get("security_events")  # nothing listed a directory


def test_pep723_dependencies_resolve_too(ex):
    r = ok(ex.run("# /// script\n# dependencies = [\"tinypkg>=2\"]\n# ///\n"
                  "import tinypkg\nprint(tinypkg.VERSION)", dependencies=["tinypkg>=2"], timeout=120))
    assert r["stdout"] == "2.0.0\n"


def test_data_science_environments_reuse_the_systems_numpy(ex):
    r = ok(ex.run("import tinynp, numpy\nprint(tinynp.total(4), numpy.__version__)", service=DS,
                  dependencies=["tinynp"], timeout=180))
    assert r["stdout"].startswith("6.0 1.")
    site = [l for l in ex.output().splitlines() if "env_built" in l and "tinynp" in l]
    assert site and "numpy" not in site[-1].split("modules=")[1]  # not installed again


def test_what_the_profile_has_needs_no_environment(ex):
    builds = ex.output().count("event=env_build ")
    r = ok(ex.run("import numpy\nprint('ran')", service=DS, dependencies=["numpy>=1.20", "pandas"]))
    assert r["stdout"] == "ran\n"
    assert ex.output().count("event=env_build ") == builds  # checked against HELLO's versions


@pytest.mark.parametrize("deps,needles", [
    (["nosuchpkg"], ["nosuchpkg", "No matching distribution", "tinypkg 1.0.0, 2.0.0", "tinydep 0.1.0"]),
    (["tinydep", "tinypkg>=2"], ["tinypkg>=2", "conflicting dependencies", "tinydep 0.1.0 depends on tinypkg<2"]),
])
def test_an_unresolvable_set_gets_an_error_naming_the_requirement(ex, deps, needles):
    r = ex.run("print('ran')", dependencies=deps, timeout=120)
    assert r["status"] == "error" and r["error"]["type"] == "DependencyError" and r["stdout"] == ""
    for needle in needles:
        assert needle in r["error"]["message"], r["error"]["message"]


def test_the_environment_is_read_only_to_the_job(ex):
    r = ex.run("import tinypkg, os\nopen(tinypkg.__file__, 'a').write('x')", dependencies=["tinydep"])
    assert r["status"] in ("error", "security_violation")
    r = ok(ex.run("import tinypkg\nprint(tinypkg.hello())", dependencies=["tinydep"]))
    assert r["stdout"] == "hello from tinypkg 1.0.0\n"


def test_a_job_cannot_install_anything_itself(ex):
    r = ex.run("import subprocess\nsubprocess.run(['pip', 'install', 'tinypkg'])", dependencies=["tinydep"])
    assert r["status"] == "security_violation"


def test_without_a_package_source_dependencies_are_the_profiles_only():
    e = Executor(slots=1, profiles="python.basic")
    try:
        r = e.run("print('ran')", dependencies=["tinydep"])
        assert r["status"] == "error" and r["error"]["type"] == "DependencyError"
        assert "tinydep (not installed)" in r["error"]["message"]
    finally:
        e.close()
