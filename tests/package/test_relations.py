"""The package's Depends and Recommends against what each profile imports: derived
again here from the profiles table (the profile-modules tool prints it) and from dpkg, the
way the executor's zygote would find each module, so a module the table gains without a
package behind it, or a package the control file lost, fails here."""
import os
import subprocess

import pytest

from pkglib import names

FIND = r'''
import importlib.util, sys
sys.path.append("/usr/lib/python3/dist-packages")
for line in sys.stdin:
    profile, module = line.split()
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except ValueError:  # __main__
        continue
    if spec is None:
        print(profile, module, "-")
    elif spec.origin in (None, "namespace"):
        print(profile, module, list(spec.submodule_search_locations)[0])
    elif spec.origin not in ("built-in", "frozen"):
        print(profile, module, spec.origin)
'''


@pytest.fixture(scope="module")
def table():
    """[(profile, module)] in table order, the default profile first."""
    tool = os.environ.get("SNAKEPIT_PROFILE_MODULES")
    if not tool:
        pytest.fail("SNAKEPIT_PROFILE_MODULES is not set: run this suite with `make test-deb`")
    out = subprocess.run([tool], capture_output=True, text=True, check=True).stdout
    return [tuple(line.split()) for line in out.splitlines()]


@pytest.fixture(scope="module")
def owners(table):
    """{profile: {package owning one of its modules}}"""
    text = "\n".join("%s %s" % pm for pm in table) + "\n"
    found = subprocess.run(["/usr/bin/python3.11", "-I", "-S", "-c", FIND], input=text,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [line.split(" ", 2) for line in found]
    for profile, module, path in rows:
        assert path != "-", "%s (profile %s) is not installed on this machine" % (module, profile)
    dpkg = subprocess.run(["dpkg", "-S", *sorted({p for _, _, p in rows})], capture_output=True,
                          text=True).stdout
    owner = {}
    for line in dpkg.splitlines():
        pkgs, _, path = line.partition(": ")
        if not line.startswith("diversion "):
            owner[path] = pkgs.split(",")[0].split(":")[0]
    out = {}
    for profile, module, path in rows:
        assert path in owner, "%s (%s) belongs to no package" % (module, path)
        out.setdefault(profile, set()).add(owner[path])
    return out


def test_the_table_lists_every_profile_and_its_modules(table):
    profiles = [p for p, _ in table]
    assert profiles[0] == "python.basic"  # the default, first in the table
    assert {"python.basic", "python.filesystem", "python.data_science"} <= set(profiles)
    ds = {m for p, m in table if p == "python.data_science"}
    # what 0.1.0's Recommends lacked, so that the data-science zygote could not start
    for module in ("sklearn", "seaborn", "statsmodels", "openpyxl", "networkx", "bs4", "lxml",
                   "yaml", "tabulate", "joblib", "sklearn.base"):
        assert module in ds, module


def test_the_default_profile_needs_only_what_the_package_depends_on(control, owners, table):
    depends = names(control["Depends"])
    default = table[0][0]
    assert owners[default] and owners[default] <= depends, owners[default] - depends


def test_every_other_profile_is_recommended(control, owners):
    have = names(control["Depends"]) | names(control["Recommends"])
    for profile, pkgs in owners.items():
        assert pkgs <= have, (profile, pkgs - have)
    for pkg in ("python3-sklearn", "python3-seaborn", "python3-statsmodels", "python3-openpyxl",
                "python3-networkx", "python3-bs4", "python3-lxml", "python3-yaml",
                "python3-tabulate", "python3-joblib", "python3-numpy", "python3-pandas"):
        assert pkg in names(control["Recommends"]), pkg


def test_nothing_is_recommended_that_no_profile_imports(control, owners):
    needed = set().union(*owners.values())
    extra = names(control["Recommends"]) - needed - {"ca-certificates"}
    assert not extra, extra
