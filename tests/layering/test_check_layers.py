"""The layering check checked: small trees, each broken in one way, must fail with the offending
line printed; a clean one must pass; and the repository itself must pass once it has its
layers.order."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

ORDER = """# a small farm
shared: proto > common
common: .
proto: .
mcp-frontend: top > mid ; side > low
executor-node: node[zmq] > link
cli: .
"""

# every folder named, every include down the order, zmq.h only where allowed
CLEAN = {
    "common/buf.h": "",
    "common/buf.c": '#include "buf.h"\n',
    "proto/wire.h": '#include "../common/buf.h"\n',
    "mcp-frontend/top/main.c": '#include "../mid/tools.h"\n#include "../side/compat.h"\n',
    "mcp-frontend/mid/tools.h": '#include "../low/store.h"\n',
    "mcp-frontend/mid/tools.c": '#include "tools.h"\n#include "../../proto/wire.h"\n',
    "mcp-frontend/side/compat.h": '#include "../low/store.h"\n',
    "mcp-frontend/low/store.h": '#include "common/buf.h"\n',
    "mcp-frontend/low/store.c": '#include "store.h"\n#include "generated_py.h"\n#include <stdio.h>\n',
    "executor-node/node/main.c": '#include <zmq.h>\n#include "../link/zchan.h"\n',
    "executor-node/link/zchan.h": "",
    "cli/main.c": '#include <zmq.h>\n#include "../common/buf.h"\n',
    "tests/unit/t.c": '#include "../../mcp-frontend/top/main.c"\n',  # outside components
}


def make_tree(tmp_path, changes=None, order=ORDER):
    files = dict(CLEAN, **(changes or {}))
    for path, text in files.items():
        p = tmp_path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / "layers.order").write_text(order)
    return tmp_path


def check(root, *args):
    r = subprocess.run([sys.executable, CHECK, "--root", str(root), *args], capture_output=True, text=True)
    return r.returncode, r.stdout


def fails_with(root, *lines, args=()):
    rc, out = check(root, *args)
    assert rc == 1, out
    for line in lines:
        assert line in out, out
    return out


def test_clean_tree_passes(tmp_path):
    assert check(make_tree(tmp_path)) == (0, "")


def test_upward_include(tmp_path):
    root = make_tree(tmp_path, {"mcp-frontend/low/store.c": '#include "store.h"\n#include "../mid/tools.h"\n'})
    fails_with(root, 'mcp-frontend/low/store.c:2: #include "../mid/tools.h" — points up: '
               "mcp-frontend/low/ is below mcp-frontend/mid/")


def test_sideways_include(tmp_path):
    root = make_tree(tmp_path, {"mcp-frontend/side/compat.c": '#include "../mid/tools.h"\n'})
    fails_with(root, 'mcp-frontend/side/compat.c:1: #include "../mid/tools.h" — sideways: '
               "mcp-frontend/side/ and mcp-frontend/mid/ are on one level")


def test_cross_component_include(tmp_path):
    root = make_tree(tmp_path, {"cli/run_route.c": '#include "../mcp-frontend/low/store.h"\n'})
    fails_with(root, 'cli/run_route.c:1: #include "../mcp-frontend/low/store.h" — cli/ includes mcp-frontend/')


def test_shared_components_keep_their_order(tmp_path):
    change = {"common/buf.c": '#include "buf.h"\n#include "../proto/wire.h"\n'}
    fails_with(make_tree(tmp_path / "a", change), 'common/buf.c:2: #include "../proto/wire.h" — common/ includes proto/')
    # allowed once the order file says so (and proto then may not include common)
    order = ORDER.replace("shared: proto > common", "shared: common > proto")
    fails_with(make_tree(tmp_path / "b", change, order), 'proto/wire.h:1: #include "../common/buf.h" — proto/ includes common/')


def test_include_circle(tmp_path):
    root = make_tree(tmp_path, {
        "mcp-frontend/low/store.c": '#include "store.h"\n#include "store_state.h"\n',
        "mcp-frontend/low/store_state.h": '#include "store.h"\n',
    })
    circle = "include circle mcp-frontend/low/store → mcp-frontend/low/store_state → mcp-frontend/low/store"
    fails_with(root, f'mcp-frontend/low/store.c:2: #include "store_state.h" — {circle}',
               f'mcp-frontend/low/store_state.h:1: #include "store.h" — {circle}')


def test_call_circle(tmp_path):
    root = make_tree(tmp_path, {
        "cli/ping.c": "int pong(int n);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n",
        "cli/pong.c": "int ping(int n);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n",
    })
    assert check(root) == (0, "")  # no include joins them: only the objects show the circle
    obj = tmp_path / "obj"
    (obj / "cli").mkdir(parents=True)
    for name in ("ping", "pong"):
        subprocess.run(["gcc", "-c", str(root / "cli" / f"{name}.c"), "-o", str(obj / "cli" / f"{name}.o")], check=True)
    (obj / "cli" / "gone.o").write_bytes((obj / "cli" / "ping.o").read_bytes())  # a source moved away
    circle = "call circle cli/ping → cli/pong → cli/ping"
    out = fails_with(root, f"cli/ping.c:2: int ping(int n) {{ return n ? pong(n - 1) : 0; }} — calls pong of cli/pong.c: {circle}",
                     f"cli/pong.c:2: int pong(int n) {{ return n ? ping(n - 1) : 1; }} — calls ping of cli/ping.c: {circle}",
                     args=("--calls", str(obj)))
    assert "gone" not in out


def test_zmq_outside_its_folder(tmp_path):
    root = make_tree(tmp_path, {"executor-node/link/zchan.c": '#include <zmq.h>\n'})
    fails_with(root, "executor-node/link/zchan.c:1: #include <zmq.h> — <zmq.h> only in executor-node/node/")


def test_unlisted_and_missing_folders(tmp_path):
    root = make_tree(tmp_path, {"mcp-frontend/extra/x.c": "", "mcp-frontend/main.c": "", "shared/x.h": ""},
                     ORDER.replace("mid ; side", "mid ; side ; gone"))
    fails_with(root, "mcp-frontend/extra/: source folder — not named in layers.order",
               "mcp-frontend/: source folder — not named in layers.order",
               "layers.order:5: mcp-frontend/gone/ — named but missing",
               "shared/: C sources — a component not named in layers.order")


def test_folder_over_25_c_files(tmp_path):
    root = make_tree(tmp_path, {f"cli/f{i}.c": "" for i in range(26)})
    fails_with(root, "cli/: 27 .c files — more than 25 in one folder")


@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, "layers.order")),
                    reason="the repository has no layers.order until its folders are moved")
def test_repository_keeps_its_layers():
    rc, out = check(REPO)
    assert rc == 0, out
