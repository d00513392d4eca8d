"""tests/lib/wheels.py — tiny pure-Python wheels built by hand (PEP 427/491: a zip with the package,
METADATA, WHEEL and RECORD), so that the dependency tests need no network and no build tool."""
import base64
import hashlib
import os
import zipfile


def build(outdir, name, version, files, requires=()):
    dist = "%s-%s" % (name.replace("-", "_"), version)
    info = dist + ".dist-info"
    meta = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
            + "".join("Requires-Dist: %s\n" % r for r in requires))
    wheel = "Wheel-Version: 1.0\nGenerator: snakepit-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = dict(files)
    entries[info + "/METADATA"] = meta
    entries[info + "/WHEEL"] = wheel
    record = []
    for path, text in entries.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    entries[info + "/RECORD"] = "\n".join(record) + "\n"
    path = os.path.join(outdir, "%s-py3-none-any.whl" % dist)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, text in entries.items():
            z.writestr(p, text)
    return path


def tiny_source(outdir):
    """tinypkg 1.0.0 and 2.0.0; tinydep 0.1.0 (tinypkg>=1,<2); tinynp 0.1.0 (numpy). Readable to
    all, as a package source must be: builds run as the node's unprivileged uid."""
    os.makedirs(outdir, exist_ok=True)
    os.chmod(outdir, 0o755)
    for v in ("1.0.0", "2.0.0"):
        build(outdir, "tinypkg", v, {"tinypkg/__init__.py":
                                     "VERSION = %r\ndef hello():\n    return 'hello from tinypkg %s'\n" % (v, v)})
    build(outdir, "tinydep", "0.1.0",
          {"tinydep.py": "import tinypkg\ndef go():\n    return 'tinydep+' + tinypkg.VERSION\n"},
          requires=["tinypkg>=1.0,<2"])
    build(outdir, "tinynp", "0.1.0",
          {"tinynp/__init__.py": "import numpy\ndef total(n):\n    return float(numpy.arange(n).sum())\n"},
          requires=["numpy>=1.20"])
    return outdir
