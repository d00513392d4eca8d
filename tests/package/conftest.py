"""Fixtures for the package suite: the .deb `make deb` built (SNAKEPIT_DEB), its control
fields, and its files extracted into a throwaway root (dpkg -x) once per session."""
import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))


@pytest.fixture(scope="session")
def deb():
    path = os.environ.get("SNAKEPIT_DEB")
    if not path:
        pytest.fail("SNAKEPIT_DEB is not set: run this suite with `make test-deb`")
    assert os.path.isfile(path), path
    return path


@pytest.fixture(scope="session")
def control(deb):
    text = subprocess.run(["dpkg-deb", "-f", deb], capture_output=True, text=True,
                          check=True).stdout
    fields, key = {}, None
    for line in text.splitlines():
        if line.startswith(" ") and key:
            fields[key] += "\n" + line
        else:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


@pytest.fixture(scope="session")
def root(deb):
    d = tempfile.mkdtemp(prefix="sp-deb-", dir="/tmp")
    subprocess.run(["dpkg-deb", "-x", deb, d], check=True)
    subprocess.run(["dpkg-deb", "-e", deb, os.path.join(d, "DEBIAN")], check=True)
    yield d
    shutil.rmtree(d, ignore_errors=True)
