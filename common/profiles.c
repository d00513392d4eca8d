/* common/profiles.c — see profiles.h. Module lists start from the basic stdlib set;
 * everything listed is pure computation once imported (no files, no network, no processes)
 * except where a profile has a workspace: then open() and pathlib reach that one directory.
 *
 * Which profiles get a workspace: python.filesystem (basic + files, for agents that only need
 * to read an input and write an output) and python.data_science (reading a CSV and writing a
 * result is what most data work starts and ends with). python.basic keeps none: the profile
 * that serves the most calls keeps the smallest surface (no write syscall at all). */
#include <stdio.h>
#include <string.h>

#include "pep440.h"
#include "profiles.h"


/* Pure computation. */
#define COMPUTE_MODULES                                                                            \
    "math", "cmath", "statistics", "decimal", "fractions", "numbers", "random", "collections",    \
        "itertools", "functools", "heapq", "bisect", "array", "string", "re", "textwrap",         \
        "difflib", "unicodedata", "json", "csv", "base64", "binascii", "hashlib", "hmac",         \
        "secrets", "datetime", "calendar", "time", "uuid", "enum", "dataclasses", "typing",       \
        "copy", "pprint", "operator", "struct", "html", "xml", "urllib.parse", "zoneinfo", "io",  \
        "abc", "contextlib", "graphlib", "colorsys", "keyword", "zlib", "reprlib", "ipaddress",   \
        "quopri", "email", NOTEBOOK_MODULES

/* Not IPython, but the part of IPython.display that notebook-style code imports, mapped to the
 * sandbox's rich outputs (executor-node/python/ipython.py): display, HTML, Markdown, JSON,
 * Image, and their kin. */
#define NOTEBOOK_MODULES "IPython"

/* What ordinary code imports around its computation: the modules themselves are
 * harmless; what they may do is the seccomp, Landlock and audit rules' to decide (no process,
 * no socket, no file outside the workspace). Modules that exist to get past those layers
 * (ctypes, _posixsubprocess, posix, marshal, pty) stay out; pdb is not importable by name, but
 * doctest's runner builds one (a debugger reaches nothing sys._getframe does not). builtins is
 * in: pickle imports it to save a plain class, and the real open and __import__ it holds reach nothing
 * the audit hook and the OS layers would not refuse. __main__ is the job's own module.
 * asyncio runs (its self-pipe is a socketpair, which both layers let through, and nothing
 * else); concurrent.futures' and multiprocessing's pools fail at their first thread or
 * process; urllib.request, http.client and friends import and fail at their first connection,
 * with the network rule's message rather than an import error. */
#define ORDINARY_MODULES                                                                           \
    "os", "sys", "pathlib", "glob", "fnmatch", "shutil", "tempfile", "filecmp", "stat", "errno",  \
        "sqlite3", "logging", "warnings", "traceback", "inspect", "gzip", "bz2", "lzma",          \
        "zipfile", "tarfile", "argparse", "optparse", "getopt", "configparser", "tomllib",        \
        "pickle", "copyreg", "shelve", "subprocess", "signal", "socket", "select", "selectors",   \
        "locale", "gettext", "codecs", "_codecs", "encodings", "platform", "shlex", "atexit", "weakref",      \
        "types", "gc", "ast", "dis", "tokenize", "token", "linecache", "importlib", "threading",   \
        "queue", "contextvars", "timeit", "getpass", "mimetypes", "unittest", "resource", "mmap", \
        "sched", "cProfile", "profile", "pstats", "tracemalloc", "faulthandler", "sysconfig",  \
        "builtins", "__main__", "__future__", "asyncio", "concurrent", "multiprocessing",      \
        "urllib", "http", "doctest"

#define COMPUTE_AND_ORDINARY COMPUTE_MODULES, ORDINARY_MODULES

static const char *const s_basic_modules[] = {COMPUTE_AND_ORDINARY, NULL};
static const char *const s_ordinary_modules[] = {ORDINARY_MODULES, NULL};

/* Debian's packages for data work: the original five and what agents reach for
 * next, with the libraries their users import by name; requests (and the urllib3
 * under it) for tenants an operator grants network egress. */
static const char *const s_data_science_modules[] = {
    COMPUTE_AND_ORDINARY, "numpy", "pandas", "scipy", "matplotlib", "mpl_toolkits", "sympy",
    "mpmath", "sklearn", "seaborn", "statsmodels", "patsy", "PIL", "openpyxl", "networkx", "bs4",
    "lxml", "yaml", "tabulate", "joblib", "dateutil", "pytz", "requests", "urllib3", NULL,
};

/* Imported lazily by the modules above at first use; a child cannot read the filesystem, so
 * they must already be in sys.modules. (Every codec is loaded too, and every submodule of the
 * profile's standard-library packages: runner.prepare.) */
#define BASIC_PRELOAD                                                                              \
    "_strptime", "xml.etree.ElementTree", "xml.etree.ElementPath", "xml.dom.minidom",             \
        "xml.sax.saxutils", "xml.parsers.expat", "json.decoder", "json.encoder", "json.scanner",  \
        "email.utils", "email.message", "email.parser", "html.entities", "html.parser",           \
        "importlib.resources", "importlib.metadata", "importlib.util", "importlib.machinery",     \
        "zoneinfo._tzpath", "zoneinfo._common", "logging.handlers", "logging.config",             \
        "sqlite3.dbapi2", "unittest.mock", "collections.abc", "os.path"

static const char *const s_basic_preload[] = {BASIC_PRELOAD, NULL};

/* Subpackages that `from scipy import stats`, `from sklearn.linear_model import …` and friends
 * import on first use, and internals the libraries import lazily (runner.warm exercises the
 * common paths in the zygote too, which catches the ones not named here). */
static const char *const s_data_science_preload[] = {
    BASIC_PRELOAD, "numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial", "numpy.ma",
    "scipy.stats", "scipy.optimize", "scipy.linalg", "scipy.integrate", "scipy.interpolate",
    "scipy.signal", "scipy.special", "scipy.sparse", "scipy.sparse.linalg", "scipy.fft",
    "scipy.spatial", "scipy.ndimage", "scipy.cluster", "scipy.cluster.hierarchy",
    "scipy.constants", "scipy.io", "matplotlib.pyplot", "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg", "matplotlib.backends.backend_pdf",
    "matplotlib.colors", "matplotlib.cm", "matplotlib.patches", "matplotlib.ticker",
    "matplotlib.dates", "matplotlib.gridspec", "mpl_toolkits.mplot3d", "pandas.plotting",
    "pandas.io.formats.excel", "sympy.plotting", "sympy.printing.pretty", "sympy.printing.latex",
    "sympy.parsing.sympy_parser", "sklearn.base", "sklearn.linear_model",
    "sklearn.model_selection", "sklearn.metrics", "sklearn.preprocessing", "sklearn.pipeline",
    "sklearn.compose", "sklearn.ensemble", "sklearn.tree", "sklearn.cluster",
    "sklearn.decomposition", "sklearn.neighbors", "sklearn.svm", "sklearn.datasets",
    "sklearn.feature_extraction", "sklearn.feature_extraction.text", "sklearn.impute",
    "sklearn.naive_bayes", "sklearn.feature_selection", "sklearn.inspection", "sklearn.manifold",
    "sklearn.dummy", "sklearn.utils", "statsmodels.api", "statsmodels.formula.api",
    "statsmodels.tsa.api", "statsmodels.tsa.arima.model", "statsmodels.stats.api", "PIL.Image",
    "PIL.ImageDraw", "PIL.ImageFont", "PIL.ImageFilter", "PIL.ImageOps", "PIL.ImageEnhance",
    "PIL.ImageChops", "PIL.ImageStat", "PIL.ImageColor", "PIL.features", "openpyxl",
    "openpyxl.styles", "openpyxl.utils", "networkx", "bs4", "lxml.etree", "lxml.html", "yaml",
    "tabulate", "seaborn", "joblib", "dateutil.parser", "dateutil.relativedelta", "pytz",
    /* requests reads ~/.netrc at its first request (through shlex) */
    "requests", "netrc", "shlex",
    NULL,
};

/* What unpickling may name (audit event pickle.find_class): data types, never the modules
 * that reach the system (os, subprocess, builtins beyond plain types…), however importable.
 * __main__ is the job's own classes; what a name there resolves to is checked too (audit.c),
 * so `from os import system` in the job does not make __main__.system unpicklable. */
#define BASIC_UNPICKLE                                                                             \
    "collections", "datetime", "decimal", "fractions", "uuid", "enum", "zoneinfo", "copyreg",     \
        "_codecs", "re", "array", "pathlib", "functools", "ipaddress", "__main__"

static const char *const s_basic_unpickle[] = {BASIC_UNPICKLE, NULL};
static const char *const s_data_science_unpickle[] = {
    BASIC_UNPICKLE, "numpy", "pandas", "scipy", "sympy", "mpmath", "matplotlib", "sklearn",
    "statsmodels", "patsy", "networkx", "PIL", "joblib", "dateutil", "pytz", NULL,
};

/* Debian installs numpy & co. here; the embedded interpreter runs with -I -S and would not
 * look there otherwise. */
static const char *const s_dist_packages[] = {"/usr/lib/python3/dist-packages", NULL};

/* Read-only inside the sandbox: the time zone database (zoneinfo), the standard library's
 * sources (so tracebacks and inspect show library lines; imports still come from memory).
 * python.data_science adds matplotlib's data and the system fonts (PIL's ImageFont.truetype
 * finds DejaVu there) and the packages' own files (sklearn's and statsmodels' bundled data
 * sets are read at every call). */
static const char *const s_basic_ro[] = {"/usr/share/zoneinfo", "/usr/lib/python3.11", NULL};
static const char *const s_data_science_ro[] = {"/usr/share/zoneinfo", "/usr/lib/python3.11",
                                                "/usr/share/matplotlib", "/usr/share/fonts",
                                                "/usr/lib/python3/dist-packages", NULL};

/* Distributions whose import name differs (PEP 723 and the dependencies argument name
 * distributions; profiles list modules). Names normalised as PEP 503 does. */
static const struct {
    const char *dist, *module;
} s_dists[] = {
    {"scikit-learn", "sklearn"},        {"pillow", "PIL"},       {"beautifulsoup4", "bs4"},
    {"pyyaml", "yaml"},                 {"python-dateutil", "dateutil"},
    {"opencv-python", "cv2"},           {"msgpack-python", "msgpack"},
};

const char *const egress_ro_paths[] = {"/usr/lib/ssl/certs", "/usr/share/ca-certificates", NULL};

const profile_t profiles[] = {
    {
        .name = "python.basic",
        .summary = "Python 3.11 and its standard library; no filesystem, no network, no "
                   "processes",
        .modules = s_basic_modules,
        .preload = s_basic_preload,
        .unpickle = s_basic_unpickle,
        .ro_paths = s_basic_ro,
        .defaults = {.wall_ms = 30000, .cpu_ms = 30000, .memory_mb = 256,
                     .output_bytes = 1 << 20, .nofile = 16},
        .max = {.wall_ms = 300000, .cpu_ms = 300000, .memory_mb = 2048,
                .output_bytes = 8 << 20, .nofile = 64},
    },
    {
        .name = "python.filesystem",
        .summary = "python.basic plus a private scratch directory: the call's files are there, "
                   "open() and pathlib read and write it, and what the code writes comes back",
        .modules = s_basic_modules,
        .preload = s_basic_preload,
        .unpickle = s_basic_unpickle,
        .ro_paths = s_basic_ro,
        .workspace = 1,
        .workspace_mb = 64,
        .defaults = {.wall_ms = 30000, .cpu_ms = 30000, .memory_mb = 256,
                     .output_bytes = 1 << 20, .nofile = 32},
        .max = {.wall_ms = 300000, .cpu_ms = 300000, .memory_mb = 2048,
                .output_bytes = 8 << 20, .nofile = 64},
    },
    {
        .name = "python.data_science",
        .summary = "numpy, pandas, scipy, matplotlib and seaborn (figures come back as images), "
                   "scikit-learn, statsmodels, sympy, Pillow, openpyxl, networkx, "
                   "beautifulsoup4/lxml, PyYAML, tabulate and requests, with a private scratch "
                   "directory for the call's files; one BLAS thread",
        .modules = s_data_science_modules,
        .preload = s_data_science_preload,
        .unpickle = s_data_science_unpickle,
        .ro_paths = s_data_science_ro,
        .site_paths = s_dist_packages,
        .workspace = 1,
        .workspace_mb = 128,
        .figures = 1,
        .defaults = {.wall_ms = 60000, .cpu_ms = 60000, .memory_mb = 1024,
                     .output_bytes = 1 << 20, .nofile = 64},
        .max = {.wall_ms = 300000, .cpu_ms = 300000, .memory_mb = 4096,
                .output_bytes = 8 << 20, .nofile = 256},
    },
};
const size_t n_profiles = sizeof profiles / sizeof profiles[0];

const profile_t *profile_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < n_profiles; i++)
        if (strcmp(profiles[i].name, name) == 0) return &profiles[i];
    return NULL;
}

const profile_t *profile_default(void)
{
    return &profiles[0];
}

void profile_apply_limits(const profile_t *p, limits_t *l)
{
    limits_fill(l, &p->defaults);
    limits_cap(l, &p->max);
}

size_t profiles_join(char *out, size_t outlen, const char *sep, int (*keep)(const profile_t *))
{
    size_t n = 0, count = 0;
    if (outlen) out[0] = '\0';
    for (size_t i = 0; i < n_profiles; i++) {
        if (keep && !keep(&profiles[i])) continue;
        int w = snprintf(out + n, n < outlen ? outlen - n : 0, "%s%s", count ? sep : "",
                         profiles[i].name);
        if (w > 0) n += (size_t)w;
        count++;
    }
    if (n >= outlen && outlen) out[outlen - 1] = '\0';
    return count;
}

int profile_has_workspace(const profile_t *p)
{
    return p->workspace;
}

int profile_allows(const profile_t *p, const char *module)
{
    size_t n = strlen(module);
    for (const char *const *m = p->modules; *m; m++) {
        size_t k = strlen(*m);
        /* exact, or a submodule of an allowed package ("xml.etree.ElementTree") */
        if (strcmp(*m, module) == 0) return 1;
        if (n > k && strncmp(*m, module, k) == 0 && module[k] == '.') return 1;
    }
    return 0;
}

const char *profile_dist_module(const char *dist, char *buf, size_t cap)
{
    char norm[128];
    pep440_normalise(dist, strlen(dist), norm, sizeof norm);
    for (size_t i = 0; i < sizeof s_dists / sizeof s_dists[0]; i++)
        if (strcmp(norm, s_dists[i].dist) == 0) return s_dists[i].module;
    /* otherwise the import name is the distribution's, with - as _ */
    size_t o = 0;
    for (const char *c = norm; *c && o + 1 < cap; c++) buf[o++] = *c == '-' ? '_' : *c;
    if (cap) buf[o] = '\0';
    return buf;
}

int profile_module_is_ordinary(const char *module)
{
    profile_t ordinary = {.modules = s_ordinary_modules};
    return profile_allows(&ordinary, module);
}

int profile_module_is_the_sandboxs(const char *module)
{
    static const char *const own[] = {NOTEBOOK_MODULES, NULL};
    profile_t sandbox = {.modules = own};
    return profile_allows(&sandbox, module);
}

int profile_provides(const profile_t *p, const char *dist)
{
    char buf[128];
    return profile_allows(p, profile_dist_module(dist, buf, sizeof buf));
}

const profile_t *profile_for_dependencies(const char *const *names, size_t n,
                                          int (*keep)(const profile_t *, void *), void *arg)
{
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        int all = !keep || keep(p, arg);
        /* a module name (an import), or a distribution's (scikit-learn is sklearn's) */
        for (size_t k = 0; k < n && all; k++)
            all = profile_allows(p, names[k]) || profile_provides(p, names[k]);
        if (all) return p;
    }
    return NULL;
}
