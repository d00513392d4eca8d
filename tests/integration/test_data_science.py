"""python.data_science end to end: a real farm (`snakepit up --profiles
python.basic,python.data_science`), used over MCP the way an agent uses it: files in, files and
figures out, package versions in get_sandbox_info and sandbox://info, a tenant's profiles
enforced, PEP 723 met and unmet."""
import base64
import hashlib
import json
import struct
import time
import zlib

import pytest

from farm import Farm, McpHttp
from fe_harness import argument_error

DS = "python.data_science"


@pytest.fixture(scope="module")
def farm():
    f = Farm(slots=2, extra=("--profiles", "python.basic,python.data_science"))
    yield f
    f.stop()


@pytest.fixture
def mcp(farm):
    c = McpHttp(farm.url, farm.api_key)
    c.initialize()
    return c


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, ctype = struct.unpack(">I4s", data[8:16])
    assert ctype == b"IHDR" and length == 13
    (crc,) = struct.unpack(">I", data[29:33])
    assert zlib.crc32(data[12:29]) & 0xFFFFFFFF == crc
    return struct.unpack(">II", data[16:24])


def test_a_plot_comes_back_as_an_image_block_and_in_structured_content(mcp):
    r = mcp.call("execute_code", {"profile": DS, "code":
                 "import matplotlib.pyplot as plt\nimport numpy as np\n"
                 "fig, ax = plt.subplots(figsize=(5, 2.5), dpi=80)\n"
                 "x = np.linspace(0, 6, 50)\nax.plot(x, np.sin(x))\nprint('plotted')"})
    s = r["structuredContent"]
    assert s["status"] == "ok" and s["stdout"] == "plotted\n"
    images = [b for b in r["content"] if b["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    png = base64.b64decode(images[0]["data"])
    assert png_size(png) == (400, 200)
    assert s["images"] == [{"mime": "image/png", "width": 400, "height": 200, "bytes": len(png)}]
    assert "figures: 1 PNG image" in r["content"][0]["text"]


def test_a_csv_goes_in_and_a_result_file_comes_out(mcp):
    r = mcp.call("execute_code", {"profile": DS, "files": {
        "data/sales.csv": "region,amount\nnorth,10\nsouth,5\nnorth,7\n",
        "logo.bin": {"content": base64.b64encode(b"\x00\xffbinary").decode(), "encoding": "base64"}},
        "code": "import pandas as pd\n"
                "df = pd.read_csv('data/sales.csv')\n"
                "totals = df.groupby('region').amount.sum()\n"
                "totals.to_csv('totals.csv')\n"
                "open('logo.rev', 'wb').write(open('logo.bin', 'rb').read()[::-1])\n"
                "totals.to_dict()"})
    s = r["structuredContent"]
    assert s["status"] == "ok", s["error"]
    assert s["result"] == "{'north': 17, 'south': 5}"
    files = {f["path"]: f for f in s["files"]}
    assert set(files) == {"totals.csv", "logo.rev"}
    assert files["totals.csv"] == {"path": "totals.csv", "bytes": 31, "encoding": "utf-8",
                                   "content": "region,amount\nnorth,17\nsouth,5\n"}
    assert files["logo.rev"]["encoding"] == "base64"
    assert base64.b64decode(files["logo.rev"]["content"]) == b"yranib\xff\x00"
    assert "totals.csv (31 bytes)" in r["content"][0]["text"]


@pytest.mark.parametrize("files,why", [
    ({"../etc/passwd": "x"}, "leaves the workspace"),
    ({"/tmp/x": "x"}, "absolute"),
    ({"a": {"content": "%%%", "encoding": "base64"}}, "not valid base64"),
    ({"a": 5}, "must be a string"),
])
def test_bad_files_are_argument_errors(mcp, files, why):
    r = mcp.request("tools/call", {"name": "execute_code",
                                   "arguments": {"profile": DS, "code": "1", "files": files}})
    assert why in argument_error(r, "files"), r


def test_files_need_a_profile_with_a_workspace(mcp):
    r = mcp.request("tools/call", {"name": "execute_code", "arguments": {
        "code": "1", "profile": "python.basic", "files": {"a.txt": "x"}}})
    assert "no workspace" in argument_error(r, "files")
    # without a profile, files take the call to the smallest profile served with a workspace:
    # this farm serves python.basic and python.data_science, not python.filesystem
    r = mcp.call("execute_code", {"code": "print(open('a.txt').read())", "files": {"a.txt": "x"}})
    s = r["structuredContent"]
    assert s["stdout"] == "x\n" and s["profile"] == DS, s
    assert "files" in s["profile_reason"]


def test_a_symlink_attempt_is_a_security_violation(mcp):
    r = mcp.call("execute_code", {"profile": DS, "code":
                 "import pathlib\npathlib.Path('l').symlink_to('/etc/passwd')"})
    assert r["isError"] and r["structuredContent"]["status"] == "security_violation"


def test_import_numpy_is_refused_in_python_basic(mcp):
    r = mcp.call("execute_code", {"code": "import numpy", "profile": "python.basic"})
    s = r["structuredContent"]
    assert r["isError"] and s["status"] == "error" and s["error"]["type"] == "ModuleNotFoundError"
    assert "python.data_science" in s["error"]["message"]
    # and the answer says where numpy is, beside the sandbox's refusal
    assert "lacks numpy, which python.data_science has" in s["profile_reason"], s["profile_reason"]
    r = mcp.request("tools/call", {"name": "execute_code", "arguments": {
        "code": "import numpy", "profile": "python.basic", "allowed_imports": ["numpy"]}})
    text = argument_error(r, "allowed_imports")
    assert "not available in profile python.basic" in text and DS in text


def test_without_a_profile_pandas_code_runs_in_python_data_science(mcp):
    r = mcp.call("execute_code", {"code": "import pandas as pd\nprint(pd.Series([1, 2]).sum())"})
    s = r["structuredContent"]
    assert s["status"] == "ok" and s["stdout"] == "3\n", s
    assert s["profile"] == DS and s["profile_reason"] == "inferred from imports pandas"
    assert "profile: python.data_science (inferred from imports pandas)" in r["content"][0]["text"]
    # the record says it too
    rec = mcp.call("get_execution", {"execution_id": s["execution_id"]})["structuredContent"]
    assert rec["profile"] == DS and rec["profile_reason"] == "inferred from imports pandas"
    # the standard library alone stays in the smallest profile
    s = mcp.call("execute_code", {"code": "import json\nprint(json.dumps(1))"})["structuredContent"]
    assert s["profile"] == "python.basic" and "smallest" in s["profile_reason"]


def test_a_tenant_without_the_profile_is_refused(farm):
    key = "key-basic-only-" + hashlib.sha256(str(time.time()).encode()).hexdigest()[:8]
    r = farm.redis()
    r.set("sp:key:" + hashlib.sha256(key.encode()).hexdigest(), "basiconly")
    r.hset("sp:t:basiconly", mapping={"created_ms": int(time.time() * 1000), "profiles": "python.basic"})
    c = McpHttp(farm.url, key)
    c.initialize()
    r = c.request("tools/call", {"name": "execute_code", "arguments": {"profile": DS, "code": "1"}})
    assert "not enabled for tenant basiconly" in argument_error(r, "profile")
    assert c.call("execute_code", {"code": "1 + 1"})["structuredContent"]["result"] == "2"
    # code that needs the profile it may not use runs where it may, and the answer says why
    s = c.call("execute_code", {"code": "import numpy"})["structuredContent"]
    assert s["profile"] == "python.basic" and s["error"]["type"] in ("ImportError", "ModuleNotFoundError")
    assert "numpy" in s["profile_reason"] and "not enabled for your tenant" in s["profile_reason"]
    info = c.call("get_sandbox_info", {})["structuredContent"]
    assert {p["name"]: p["available"] for p in info["profiles"]}[DS] is False


def test_pep723_satisfiable_and_not(mcp):
    ok = mcp.call("execute_code", {"profile": DS, "code":
                  "# /// script\n# dependencies = [\"numpy>=1.20\", \"pandas\"]\n# ///\n"
                  "import numpy as np\nprint(np.arange(3).sum())"})
    assert ok["structuredContent"]["status"] == "ok" and ok["structuredContent"]["stdout"] == "3\n"
    bad = mcp.call("execute_code", {"profile": DS, "code":
                   "# /// script\n# dependencies = [\"torch>=2\", \"numpy\"]\n# ///\nprint('ran')"})
    s = bad["structuredContent"]
    assert bad["isError"] and s["status"] == "error" and s["stdout"] == ""
    assert s["error"]["type"] == "DependencyError" and "torch>=2 (not installed)" in s["error"]["message"]


def _packages(doc):
    return {p["name"]: p.get("packages") for p in doc["profiles"]}


def test_sandbox_info_lists_each_profiles_packages_with_versions(farm, mcp):
    deadline = time.time() + 20  # the node publishes sp:profiles every 5 s
    while True:
        info = mcp.call("get_sandbox_info", {})["structuredContent"]
        pk = _packages(info)
        if pk.get(DS) or time.time() > deadline:
            break
        time.sleep(0.5)
    assert set(pk[DS]) >= {"numpy", "pandas", "scipy", "matplotlib", "sympy"}
    assert all(v and v[0].isdigit() for v in pk[DS].values())
    assert pk["python.basic"] == {}
    ds = [p for p in info["profiles"] if p["name"] == DS][0]
    assert ds["workspace"] and ds["figures"] and "numpy" in ds["modules"]
    assert ds["default_limits"]["memory_mb"] == 1024 and ds["python"].startswith("3.11")
    res = mcp.request("resources/read", {"uri": "sandbox://info"})["result"]
    doc = json.loads(res["contents"][0]["text"])
    assert _packages(doc)[DS]["numpy"] == pk[DS]["numpy"]


def test_the_node_snapshot_carries_the_versions(farm):
    r = farm.redis()
    deadline = time.time() + 10
    while time.time() < deadline:
        keys = r.keys("sp:metrics:executor:*")
        if keys and r.hget(keys[0], "profiles"):
            break
        time.sleep(0.2)
    profiles = json.loads(r.hget(keys[0], "profiles"))
    assert "numpy" in profiles[DS]["packages"] and profiles["python.basic"]["packages"] == {}


def test_a_pep723_script_without_a_profile_runs_where_its_dependencies_are(mcp):
    r = mcp.call("execute_code", {"code": "# /// script\n# dependencies = [\"numpy\", \"pandas>=1\"]\n"
                                          "# ///\nimport numpy as np\nprint(np.ones(2).sum())"})
    assert r["structuredContent"]["status"] == "ok", r["structuredContent"]["error"]
    assert r["structuredContent"]["stdout"] == "2.0\n"
    r = mcp.call("execute_code", {"code": "# /// script\n# dependencies = [\"torch\"]\n# ///\n1"})
    s = r["structuredContent"]
    assert s["error"]["type"] == "DependencyError" and "python.basic" in s["error"]["message"]


def test_pep723_routes_by_distribution_names(mcp):
    # scikit-learn is sklearn's distribution, pillow PIL's: before, neither routed anywhere
    r = mcp.call("execute_code", {"code": "# /// script\n# dependencies = [\"scikit-learn\", \"pillow\"]\n"
                                          "# ///\nimport sklearn, PIL\nprint('ran')"})
    assert r["structuredContent"]["status"] == "ok", r["structuredContent"]["error"]


def test_a_sessions_figure_and_files_come_back_once(mcp):
    # each cell returns what it made or changed: a figure is not sent again with every later
    # cell, a file written as a cell begins is that cell's and no other's
    s = mcp.call("create_session", {"profile": DS})["structuredContent"]
    sid = s["session_id"]
    try:
        def cell(code):
            r = mcp.call("execute_code", {"session_id": sid, "code": code})
            assert r["structuredContent"]["status"] == "ok", r["structuredContent"]["error"]
            return r
        r = cell("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])")
        assert len(r["structuredContent"]["images"]) == 1
        assert [c["type"] for c in r["content"]].count("image") == 1
        for i in range(6):
            r = cell("open('step%d.txt', 'w').close()\nx = %d" % (i, i))
            assert r["structuredContent"]["images"] == []
            assert [c["type"] for c in r["content"]].count("image") == 0
            assert [f["path"] for f in r["structuredContent"]["files"]] == ["step%d.txt" % i]
        r = cell("plt.xlabel('n')")
        assert len(r["structuredContent"]["images"]) == 1
    finally:
        mcp.call("close_session", {"session_id": sid})


def test_importlib_metadata_and_ipython_display_over_mcp(mcp):
    r = mcp.call("execute_code", {"profile": DS, "code":
                 "import importlib.metadata as md\nfrom IPython.display import display, Markdown\n"
                 "display(Markdown('**pandas %s**' % md.version('pandas')))"})
    s = r["structuredContent"]
    assert s["status"] == "ok", s["error"]
    md = [o for o in s["outputs"] if o["mimeType"] == "text/markdown"]
    assert md and md[0]["data"].startswith("**pandas 1.")
