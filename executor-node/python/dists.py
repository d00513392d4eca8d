# executor-node/python/dists.py — importlib.metadata in the sandbox (module _snakepit_dists).
#
# A job imports from memory only: runner.prepare empties sys.path and takes the path finder out
# of sys.meta_path (in a dependency environment's zygote, the finder that stays imports and never
# lists a directory), so importlib.metadata, which finds distributions by listing sys.path's
# directories, found none: importlib.metadata.version("pandas") raised PackageNotFoundError.
# Here the zygote reads, while its paths still reach them, the metadata files of the
# distributions it can import — the profile's (Debian's dist-packages) and a dependency
# environment's (read from the host's copy, files only, never code) — and keeps them in memory;
# a finder on sys.meta_path answers importlib.metadata from that copy. version(), metadata(),
# requires(), entry_points() and packages_distributions() work as elsewhere; files() is None
# (the RECORD is not kept). Compiled into snakepit-zygote with runner.py.
import importlib.metadata as md
import os
import pathlib
import re

# The files kept of each distribution (the first two are its metadata: a wheel's METADATA, an
# egg's PKG-INFO), and how large each may be once its long description is dropped.
_FILES = ("METADATA", "PKG-INFO", "entry_points.txt", "top_level.txt", "requires.txt")
_FILE_CAP = 64 * 1024

_kept = {}  # normalised name → _Distribution


def _normalize(name):
    """A distribution's name as importlib.metadata compares them (PEP 503, '_' for '-')."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _headers(text):
    """Metadata without its long description (the body, or an old-style Description header):
    what version(), metadata()[...] and requires() read, at a fraction of the size."""
    head = text.split("\n\n", 1)[0]
    out, skipping = [], False
    for line in head.splitlines():
        if line[:1] in (" ", "\t"):
            if not skipping:
                out.append(line)
            continue
        skipping = line.lower().startswith("description:")
        if not skipping:
            out.append(line)
    return "\n".join(out) + "\n"


class _Distribution(md.Distribution):
    """A distribution whose files are held in memory, at the location a job sees."""

    def __init__(self, files, location):
        self._files = files
        self._location = location

    def read_text(self, filename):
        return self._files.get(filename)

    def locate_file(self, path):
        return pathlib.PurePosixPath(self._location).parent / path


def _top_level_inferred(dist):
    """The import names a distribution's RECORD shows (its .py files' first components), as
    importlib.metadata infers them when there is no top_level.txt."""
    try:
        files = dist.files or ()
    except (OSError, UnicodeDecodeError):
        return set()
    return {f.parts[0] if len(f.parts) > 1 else f.with_suffix("").name
            for f in files if f.suffix == ".py" and not f.parts[0].endswith((".dist-info", ".data"))}


def keep(dist, location, top_level=()):
    """Copies dist's metadata files into memory, under location (its .dist-info or .egg-info
    directory as a job sees it). top_level: its import names, written as a top_level.txt when
    it has none (wheels list them only in the RECORD, which is not kept: read here instead when
    top_level is empty). Returns its name, or None when it has no readable name."""
    files = {}
    for name in _FILES:
        try:
            text = dist.read_text(name)
        except (OSError, UnicodeDecodeError):
            text = None
        if text is None:
            continue
        if name in ("METADATA", "PKG-INFO"):
            text = _headers(text)
        if len(text) <= _FILE_CAP:
            files[name] = text
    if "top_level.txt" not in files:
        top_level = set(top_level) or _top_level_inferred(dist)
        if top_level:
            files["top_level.txt"] = "".join(m + "\n" for m in sorted(top_level))
    copy = _Distribution(files, location)
    try:
        name = copy.metadata["Name"]
    except Exception:
        return None
    if not name:
        return None
    _kept.setdefault(_normalize(name), copy)
    return name


def keep_environment(host_site, job_site):
    """A dependency environment's distributions, read in its directory on the host and kept
    where the job sees it (/deps). {name: version} of those with a readable name."""
    versions = {}
    for dist in md.distributions(path=[host_site]):
        where = getattr(dist, "_path", None)  # PathDistribution: its metadata directory
        location = os.path.join(job_site, where.name) if where is not None else job_site
        name = keep(dist, location)
        if name:
            versions[name] = dist.version
    return versions


def location_of(dist):
    """Where a distribution found on the zygote's paths lives; the job sees it at the same
    place (the profile's read-only paths hold Debian's dist-packages)."""
    where = getattr(dist, "_path", None)
    return str(where) if where is not None else "/"


class Finder:
    """The distribution finder a job's sys.meta_path holds: importlib.metadata asks every
    finder there for distributions; this one answers from memory and imports nothing."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        return None

    @staticmethod
    def find_distributions(context=md.DistributionFinder.Context()):
        name = getattr(context, "name", None)
        if name is None:
            return iter(list(_kept.values()))
        found = _kept.get(_normalize(name))
        return iter([found] if found is not None else [])

    @staticmethod
    def invalidate_caches():
        pass
