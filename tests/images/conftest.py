"""The image suite (make test-images): deploy/Containerfile and deploy/Containerfile.deb built
with podman on a Debian 12 root made from a Debian mirror (no registry), and farms of their
containers answering calls. Images are kept between runs (podman's layer cache); the root is
made again only when missing or with SNAKEPIT_IMAGES_FRESH=1."""
import glob
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from imagelib import ROOT, RUNTIME, build, image_exists, podman  # noqa: E402

BASE = os.environ.get("SNAKEPIT_IMAGE_BASE") or "localhost/snakepit-test-root:bookworm"
TARGETS = ("base", "executor", "mcp", "broker", "redis")


@pytest.fixture(scope="session")
def base():
    probe = subprocess.run(["podman", "run", "--rm", *RUNTIME, "--help"], capture_output=True,
                           text=True)
    assert probe.returncode == 0, "podman cannot run here: " + probe.stderr
    if not image_exists(BASE) or os.environ.get("SNAKEPIT_IMAGES_FRESH"):
        r = subprocess.run([os.path.join(ROOT, "deploy", "images", "make-root.sh"), BASE],
                           capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, r.stderr
    return BASE


@pytest.fixture(scope="session")
def deb_images(base):
    debs = glob.glob(os.path.join(ROOT, "snakepit_*.deb"))
    assert len(debs) == 1, "Containerfile.deb installs snakepit_*.deb: exactly one, not %s" % debs
    version = os.path.basename(debs[0]).split("_")[1]
    return {t: build("deploy/Containerfile.deb", "localhost/snakepit-test-%s:%s" % (t, version),
                     base, target=t) for t in TARGETS}


@pytest.fixture(scope="session")
def source_image(base):
    return build("deploy/Containerfile", "localhost/snakepit-test:src", base)
