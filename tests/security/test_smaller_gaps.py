"""Three small honesty gaps the third red-team round found, each closed at its cause:
- a path relative to a descriptor (dir_fd=) was judged by the Python layer against the working
  directory, so a write outside the workspace reached the OS layers (which stopped it) as a
  plain error instead of the Python layer's refusal;
- one global with a name that is not valid text (a lone surrogate) made a session's snapshot
  fail altogether;
- a dependency whose environment marker is false here (`; python_version < "3"`) still counted,
  and a node without a package source refused the job for it."""
import pytest

from harness import Executor

DS = "python.data_science"


@pytest.fixture(scope="module")
def ds():
    e = Executor(slots=2, profiles=DS)
    yield e
    e.close()


@pytest.mark.parametrize("op", [
    "os.mkdir('planted', dir_fd=fd)",
    "os.open('planted', os.O_WRONLY | os.O_CREAT, dir_fd=fd)",
    "os.open('UTC', os.O_RDONLY, dir_fd=fd)",
    "os.rename('a', 'b', src_dir_fd=fd, dst_dir_fd=fd)",
    "os.remove('UTC', dir_fd=fd)",
])
def test_a_path_relative_to_a_descriptor_outside_the_workspace_is_refused_by_the_python_layer(ds, op):
    code = "import os\nfd = os.open('/usr/share/zoneinfo', os.O_RDONLY)\n" + op
    r = ds.run(code, service=DS)
    assert r["status"] == "security_violation", (r["status"], r.get("error"))
    assert "[sandbox]" in r["error"]["message"], r["error"]


def test_descriptor_relative_work_inside_the_workspace_still_works(ds):
    code = ("import os, shutil\nd = os.open('.', os.O_RDONLY)\nos.mkdir('sub', dir_fd=d)\n"
            "f = os.open('sub/f.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d)\nos.write(f, b'x')\n"
            "os.close(f)\nos.rename('sub/f.txt', 'sub/g.txt', src_dir_fd=d, dst_dir_fd=d)\n"
            "print(os.listdir('sub'))\nshutil.rmtree('sub')\nprint(os.path.exists('sub'))")
    r = ds.run(code, service=DS)
    assert r["status"] == "ok", r.get("error")
    assert r["stdout"] == "['g.txt']\nFalse\n"


def test_a_name_that_is_not_text_spoils_no_snapshot(ds):
    sid = ds.new_session(DS, memory_mb=256)
    r = ds.run("globals()['bad\\udcff'] = 1\nglobals()[7] = 'seven'\nx = 5", service=DS, session=sid)
    assert r["status"] == "ok", r.get("error")
    snap = ds.run("", service=DS, kind="session_snapshot", session=sid)
    assert snap["status"] == "ok", snap.get("error")
    saved = snap["snapshot"]
    assert "x" in saved["variables"], saved
    assert sorted(s["name"] for s in saved["skipped"]) == ["7", "bad\\udcff"], saved["skipped"]
    info = ds.run("", service=DS, kind="session_info", session=sid)
    assert info["status"] == "ok", info.get("error")


@pytest.mark.parametrize("marker", ['python_version < "3"', "sys_platform == 'win32'",
                                    "os_name == 'nt' and python_version >= '3.8'"])
def test_a_dependency_whose_marker_is_false_here_is_not_needed(marker):
    e = Executor(slots=1)  # no package source
    try:
        r = e.run("print('ran')", dependencies=["tinydep; " + marker])
        assert r["status"] == "ok" and r["stdout"] == "ran\n", (r["status"], r.get("error"))
        r = e.run("print('ran')", dependencies=["tinydep; python_version >= '3'"])
        assert r["status"] == "error" and "tinydep" in r["error"]["message"]
    finally:
        e.close()
