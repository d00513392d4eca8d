"""python.data_science and python.filesystem driven the way the broker drives them:
numpy, pandas and matplotlib as a user calls them, figures as PNG images, files in and out of
the per-job workspace, PEP 723 dependencies, and the requests that must be turned away."""
import json
import struct
import zlib

import pytest

from harness import Executor

DS = "python.data_science"
FS = "python.filesystem"


@pytest.fixture(scope="module")
def ex():
    e = Executor(slots=2, profiles="python.basic,python.filesystem,python.data_science")
    yield e
    e.close()


def png_chunks(data):
    """The PNG's chunks, each CRC checked (PNG spec §5.3); fails on anything else."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(ctype + body) & 0xFFFFFFFF == crc, "bad CRC in %r" % ctype
        chunks.append((ctype, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    return chunks


def png_size(data):
    width, height = struct.unpack(">II", png_chunks(data)[0][1][:8])
    return width, height


def ok(r):
    assert r["status"] == "ok", (r["status"], r.get("error"), r["stderr"])
    return r


# ---- computing ---------------------------------------------------------------------------


def test_pandas_groupby(ex):
    r = ok(ex.run("import pandas as pd\n"
                  "df = pd.DataFrame({'city': ['Oslo', 'Rome', 'Oslo', 'Rome', 'Lima'],\n"
                  "                   'sales': [10, 20, 30, 5, 7]})\n"
                  "totals = df.groupby('city')['sales'].sum().to_dict()\n"
                  "print(df.groupby('city')['sales'].mean())",
                  service=DS, inspect=["totals"]))
    assert json.loads(r["variables"])["totals"] == {"Lima": 7, "Oslo": 40, "Rome": 25}
    assert "Oslo    20.0" in r["stdout"]


def test_numpy_linear_solve(ex):
    r = ok(ex.run("import numpy as np\n"
                  "A = np.array([[3.0, 1.0], [1.0, 2.0]])\n"
                  "b = np.array([9.0, 8.0])\n"
                  "x = np.linalg.solve(A, b)\n"
                  "solution = x.round(6).tolist()\n"
                  "np.allclose(A @ x, b)", service=DS, inspect=["solution"]))
    assert json.loads(r["variables"])["solution"] == [2.0, 3.0]
    assert r["result"] == "True"


def test_scipy_and_sympy(ex):
    r = ok(ex.run("from scipy import stats, optimize\nimport sympy as sp\n"
                  "x = sp.symbols('x')\n"
                  "print(sp.integrate(sp.exp(-x**2), (x, -sp.oo, sp.oo)))\n"
                  "print(round(optimize.brentq(lambda v: v*v - 2, 0, 2), 6))\n"
                  "print(round(stats.norm.cdf(0), 3))", service=DS))
    assert r["stdout"] == "sqrt(pi)\n1.414214\n0.5\n"


def test_blas_runs_on_one_thread(ex):
    # threads are refused by seccomp: a BLAS that tried to start some would fail or be slow
    r = ok(ex.run("import numpy as np\nm = np.random.default_rng(0).random((300, 300))\n"
                  "print((m @ m).shape)", service=DS))
    assert r["stdout"] == "(300, 300)\n"


# ---- figures -------------------------------------------------------------------------------


def test_a_line_plot_comes_back_as_a_png_of_the_right_size(ex):
    r = ok(ex.run("import matplotlib.pyplot as plt\n"
                  "fig, ax = plt.subplots(figsize=(4, 3), dpi=100)\n"
                  "ax.plot([0, 1, 2, 3], [1, 4, 9, 16], label='squares')\n"
                  "ax.set_title('Squares')\nax.legend()", service=DS))
    assert len(r["images"]) == 1
    image = r["images"][0]
    assert image["mime"] == "image/png"
    assert png_size(image["data"]) == (400, 300)
    assert (image["width"], image["height"]) == (400, 300)
    assert not r.get("truncated_media")


def test_plt_show_returns_the_figure_and_closes_it(ex):
    r = ok(ex.run("import matplotlib.pyplot as plt\n"
                  "plt.figure(figsize=(2, 2), dpi=50); plt.plot([1, 2]); plt.show()\n"
                  "print(len(plt.get_fignums()))", service=DS))
    assert r["stdout"] == "0\n"
    assert [png_size(i["data"]) for i in r["images"]] == [(100, 100)]


def test_figures_are_capped_with_a_flag(ex):
    r = ok(ex.run("import matplotlib.pyplot as plt\n"
                  "for i in range(11):\n    plt.figure(figsize=(1, 1), dpi=20).gca().plot([i])",
                  service=DS))
    assert len(r["images"]) == 8
    assert r["truncated_media"] & 1


def test_figures_do_not_leak_into_the_next_job(ex):
    ok(ex.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])", service=DS))
    r = ok(ex.run("import matplotlib.pyplot as plt\nprint(plt.get_fignums())", service=DS))
    assert r["stdout"] == "[]\n" and not r["images"]


def test_basic_profile_returns_no_images_and_refuses_numpy(ex):
    r = ex.run("import numpy as np\nprint(np.zeros(2))")
    assert r["status"] == "error" and r["error"]["type"] == "ModuleNotFoundError"
    assert "not allowed in profile python.basic" in r["error"]["message"]
    assert 'it is in python.data_science — pass profile="python.data_science"' in r["error"]["message"]
    r = ex.run("import matplotlib")
    assert r["status"] == "error" and not r.get("images")


# ---- files ---------------------------------------------------------------------------------


def test_a_script_reads_a_csv_and_writes_a_file_that_comes_back(ex):
    csv = "name,score\nada,90\nbob,72\ncyd,85\n"
    r = ok(ex.run("import pandas as pd\n"
                  "df = pd.read_csv('scores.csv')\n"
                  "df['passed'] = df.score >= 80\n"
                  "import pathlib\npathlib.Path('out').mkdir()\n"
                  "df.to_csv('out/graded.csv', index=False)\n"
                  "print(df.passed.sum())", service=DS, files={"scores.csv": csv}))
    assert r["stdout"] == "2\n"
    files = {f["path"]: f["data"] for f in r["files"]}
    assert files == {"out/graded.csv": b"name,score,passed\nada,90,True\nbob,72,False\ncyd,85,True\n"}


def test_binary_inputs_and_outputs_round_trip(ex):
    blob = bytes(range(256)) * 4
    r = ok(ex.run("data = open('in.bin', 'rb').read()\n"
                  "open('rev.bin', 'wb').write(data[::-1])\nlen(data)",
                  service=FS, files={"in.bin": blob}))
    assert r["result"] == "1024"
    assert {f["path"]: f["data"] for f in r["files"]} == {"rev.bin": blob[::-1]}


def test_a_changed_input_comes_back_and_an_unchanged_one_does_not(ex):
    r = ok(ex.run("open('a.txt', 'a').write('+more')", service=FS,
                  files={"a.txt": "base", "b.txt": "same", "sub/c.txt": "deep"}))
    assert {f["path"]: f["data"] for f in r["files"]} == {"a.txt": b"base+more"}


def test_each_job_starts_with_an_empty_workspace(ex):
    ok(ex.run("open('left-behind.txt', 'w').write('x')", service=FS))
    for _ in range(4):  # whichever pooled child takes the job
        r = ok(ex.run("import pathlib\nsorted(p.name for p in pathlib.Path('.').iterdir())",
                      service=FS))
        assert r["result"] == "[]"


@pytest.mark.parametrize("path,why", [
    ("../escape.txt", "leaves the workspace"),
    ("a/../../escape.txt", "leaves the workspace"),
    ("/etc/passwd", "absolute"),
    ("./x", "'.' component"),
    ("a//b", "empty"),
    ("tab\there", "control character"),
    ("/".join(["d"] * 9) + "/f", "nested"),
])
def test_file_paths_that_leave_the_workspace_are_rejected_before_running(ex, path, why):
    r = ex.run("print('ran')", service=FS, files={path: "x"})
    assert r["status"] == "rejected" and r["stdout"] == ""
    assert r["error"]["type"] == "BadFiles" and why in r["error"]["message"]


def test_a_file_and_a_directory_of_the_same_name_are_rejected(ex):
    r = ex.run("print('ran')", service=FS, files={"data": "x", "data/in.csv": "y"})
    assert r["status"] == "rejected" and "both a file and a directory" in r["error"]["message"]


def test_files_for_a_profile_without_a_workspace_are_rejected(ex):
    r = ex.run("print('ran')", files={"in.csv": "a"})
    assert r["status"] == "rejected" and "no workspace" in r["error"]["message"]


def test_a_symlink_out_of_the_workspace_cannot_be_made(ex):
    r = ex.run("import pathlib\npathlib.Path('link').symlink_to('/etc/passwd')", service=FS)
    assert r["status"] == "security_violation" and not r["files"]


def test_writing_outside_the_workspace_is_stopped(ex):
    for code in ("open('/tmp/x', 'w').write('x')", "open('../x', 'w').write('x')",
                 "import pathlib\npathlib.Path('/work/x').write_text('x')"):
        r = ex.run(code, service=FS)
        assert r["status"] == "security_violation", (code, r["status"], r.get("error"))


def test_a_file_past_the_workspace_size_is_a_clean_error(ex):
    r = ex.run("with open('big', 'wb') as f:\n"
               "    for _ in range(200):\n        f.write(b'x' * (1 << 20))",
               service=FS, memory_mb=512)
    assert r["status"] == "error" and r["error"]["type"] == "OSError"
    assert "File too large" in r["error"]["message"]
    assert r["truncated_media"] & 2  # the 64 MiB file was too big to return
    ok(ex.run("open('small', 'w').write('fine')", service=FS))


# ---- PEP 723 -----------------------------------------------------------------------------


def test_pep723_dependencies_the_profile_has_run(ex):
    r = ok(ex.run("# /// script\n# requires-python = \">=3.10\"\n"
                  "# dependencies = [\"numpy>=1.20\", \"pandas\", \"matplotlib>=3,<4\"]\n# ///\n"
                  "import numpy\nprint('ran')", service=DS))
    assert r["stdout"] == "ran\n"


def test_pep723_distribution_names_that_differ_from_module_names_are_found(ex):
    # Before: versions were looked up by module name, so sklearn, PIL, bs4, yaml had none
    r = ok(ex.run("# /// script\n# dependencies = [\"scikit-learn>=1\", \"Pillow>=9\", "
                  "\"beautifulsoup4\", \"PyYAML>=5\", \"python-dateutil\"]\n# ///\n"
                  "import sklearn, PIL, bs4, yaml\nprint('ran')", service=DS))
    assert r["stdout"] == "ran\n"


def test_pep723_dependencies_the_profile_lacks_fail_early_with_their_names(ex):
    r = ex.run("# /// script\n# dependencies = [\"flask>=2\", \"numpy>=99\", \"pandas\"]\n# ///\n"
               "print('ran')", service=DS)
    assert r["status"] == "error" and r["stdout"] == ""
    assert r["error"]["type"] == "DependencyError"
    message = r["error"]["message"]
    assert "flask>=2 (not installed)" in message and "numpy>=99 (installed: " in message
    assert "pandas" not in message.split("dependencies:")[1].split(".")[0]
    r = ex.run("# /// script\n# dependencies = [\"numpy\"]\n# ///\nprint('ran')")
    assert r["status"] == "error" and "numpy (not installed)" in r["error"]["message"]


def test_a_malformed_pep723_block_is_reported(ex):
    r = ex.run("# /// script\n# dependencies = [\"numpy\"\n# ///\nprint('ran')", service=DS)
    assert r["status"] == "error" and r["error"]["type"] == "ScriptMetadataError"


# ---- rich outputs ---------------------------------------------------------------


def _outputs(r, kind=None):
    return [o for o in r.get("outputs") or () if kind is None or o["kind"] == kind]


def test_a_trailing_dataframe_comes_back_as_html_json_and_text(ex):
    r = ok(ex.run("import pandas as pd\npd.DataFrame({'x': range(200), 'y': ['é'] * 200})",
                  service=DS))
    mimes = {o["mime"]: o["data"] for o in _outputs(r, "result")}
    assert set(mimes) == {"text/html", "application/json", "text/plain"}
    table = json.loads(mimes["application/json"])
    assert table["shape"] == [200, 2] and table["truncated"] is True and len(table["data"]) == 50
    assert table["data"][0] == [0, "é"] and b"<table" in mimes["text/html"]
    assert "[200 rows x 2 columns]" in r["result"]  # the repr stays, for clients of the old shape


def test_display_renders_each_object_in_order(ex):
    r = ok(ex.run("import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(2, 1), dpi=40)\n"
                  "display('text', {'k': [1, 2]}, fig)\nprint(len(plt.get_fignums()))", service=DS))
    outs = _outputs(r, "display")
    assert [(o["index"], o["mime"]) for o in outs] == [
        (0, "text/plain"), (1, "application/json"), (1, "text/plain"), (2, "image/png")]
    assert png_size(outs[-1]["data"]) == (80, 40)
    assert r["stdout"] == "0\n" and not r["images"]  # displayed, so closed: not returned twice


def test_figures_as_svg_on_request(ex):
    r = ok(ex.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()", service=DS,
                  figure_format="svg"))
    assert not r["images"]
    (svg,) = _outputs(r)
    assert svg["mime"] == "image/svg+xml" and b"<svg" in svg["data"]


def test_outputs_are_capped_with_a_flag(ex):
    r = ok(ex.run("for i in range(40):\n    display(i)", service=DS))
    assert len({o["index"] for o in _outputs(r)}) == 16
    assert r["truncated_media"] & 4
