"""What a session's cell returns of its workspace and its figures: exactly what that cell wrote
or changed. A file written as a cell begins is the cell's (its start is read from the clock the
kernel stamps files with, which runs up to a few ms behind the finer one it used to be read
from: 3 of 80 such files went missing); a file an earlier cell wrote is not returned again,
however quickly the cells follow each other; a figure comes back when it is new or its picture
changed, not with every later cell."""
import pytest

from harness import Executor

DS = "python.data_science"


@pytest.fixture(scope="module")
def ex():
    e = Executor(slots=2, profiles=DS)
    yield e
    e.close()


def paths(r):
    return [f["path"] for f in r["files"]]


def test_a_file_written_as_the_cell_begins_is_always_the_cells(ex):
    sid = ex.new_session(service=DS)
    # cells back to back: many share one tick of the file clock. A file created and never
    # looked at keeps the clock's coarse stamp (an empty one, or one made with os.open and
    # os.write); one Python's open() looked at before writing gets a finer one.
    writes = ("open('f{i}.txt', 'w').close()",
              "import os\nfd = os.open('f{i}.txt', os.O_WRONLY | os.O_CREAT)\n"
              "os.write(fd, b'{i}')\nos.close(fd)",
              "open('f{i}.txt', 'w').write('{i}')")
    for i in range(90):
        r = ex.run(writes[i % 3].format(i=i), service=DS, session=sid)
        assert r["status"] == "ok", r.get("error")
        assert paths(r) == ["f%d.txt" % i], (i, paths(r))


def test_a_file_rewritten_with_the_same_size_comes_back_each_time(ex):
    sid = ex.new_session(service=DS)
    for i in range(20):
        r = ex.run("open('same.txt', 'w').write('%d')" % (i % 10), service=DS, session=sid)
        assert [(f["path"], f["data"]) for f in r["files"]] == [("same.txt", str(i % 10).encode())]
        r = ex.run("n = %d" % i, service=DS, session=sid)
        assert r["files"] == [], i


def test_a_forks_first_cell_returns_only_what_it_writes(ex):
    sid = ex.new_session(service=DS)
    ex.run("open('parent.txt', 'w').write('p')", service=DS, session=sid)
    fid = ex.fork_session(sid, service=DS)
    r = ex.run("open('child.txt', 'w').write('c')", service=DS, session=fid)
    assert paths(r) == ["child.txt"]
    r = ex.run("print(open('parent.txt').read())", service=DS, session=fid)
    assert r["stdout"] == "p\n" and r["files"] == []


def test_a_figure_is_sent_when_new_or_changed_only(ex):
    sid = ex.new_session(service=DS)
    cell = lambda code: ex.run(code, service=DS, session=sid)  # noqa: E731
    r = cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    assert len(r["images"]) == 1
    first = r["images"][0]["data"]
    for code in ("x = 1", "print('no plotting')", "plt.gcf().savefig('copy.png')"):
        r = cell(code)
        assert r["images"] == [], code  # unchanged: sent once
    assert paths(r) == ["copy.png"]
    r = cell("plt.title('changed')")
    assert len(r["images"]) == 1 and r["images"][0]["data"] != first
    r = cell("fig2 = plt.figure()\nplt.plot([3, 2, 1])")
    assert len(r["images"]) == 1  # the new figure only
    r = cell("y = 2")
    assert r["images"] == []
    r = cell("plt.close('all')\nplt.plot([1, 2, 3])")
    assert len(r["images"]) == 1  # a new figure, though it looks like the first one
