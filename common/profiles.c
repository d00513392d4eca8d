/* common/profiles.c — see profiles.h. Module lists follow the basic stdlib set of issue #3;
 * everything listed is pure computation once imported (no files, no network, no processes)
 * except where a profile has a workspace: then open() and pathlib reach that one directory.
 *
 * Which profiles get a workspace: python.filesystem (basic + files, for agents that only need
 * to read an input and write an output) and python.data_science (reading a CSV and writing a
 * result is what most data work starts and ends with). python.basic keeps none: the profile
 * that serves the most calls keeps the smallest surface (no write syscall at all). */
#include <stdio.h>
#include <string.h>

#include "profiles.h"


/* The stdlib set of python.basic (issue #3). */
#define BASIC_MODULES                                                                              \
    "math", "cmath", "statistics", "decimal", "fractions", "numbers", "random", "collections",    \
        "collections.abc", "itertools", "functools", "heapq", "bisect", "array", "string", "re",  \
        "textwrap", "difflib", "unicodedata", "json", "csv", "base64", "binascii", "hashlib",     \
        "hmac", "secrets", "datetime", "calendar", "time", "uuid", "enum", "dataclasses",         \
        "typing", "copy", "pprint", "operator", "struct", "html", "html.parser", "xml.etree",     \
        "urllib.parse", "zoneinfo", "io", "abc", "contextlib", "graphlib", "colorsys", "keyword", \
        "zlib"

static const char *const s_basic_modules[] = {BASIC_MODULES, NULL};
static const char *const s_filesystem_modules[] = {BASIC_MODULES, "pathlib", NULL};

static const char *const s_data_science_modules[] = {
    BASIC_MODULES, "pathlib", "numpy", "pandas", "scipy", "matplotlib", "mpl_toolkits", "sympy",
    "mpmath", NULL,
};

/* Imported lazily by the modules above at first use; a child cannot read the filesystem, so
 * they must already be in sys.modules. */
static const char *const s_basic_preload[] = {
    "_strptime", "encodings.latin_1", "encodings.ascii", "encodings.utf_16", "encodings.utf_32",
    "encodings.cp1252", "encodings.idna", "encodings.raw_unicode_escape",
    "encodings.unicode_escape", "xml.etree.ElementTree", "xml.etree.ElementPath", "json.decoder",
    "json.encoder", "json.scanner", "email.utils", "html.entities", "ast", "traceback", "linecache",
    "importlib.resources", "zoneinfo._tzpath", "zoneinfo._common", "tomllib", "pathlib",
    NULL,
};

/* Subpackages that `from scipy import stats` and friends import on first use, and the
 * internals that pandas, matplotlib and sympy import lazily (runner.warm exercises the common
 * paths in the zygote too, which catches the ones not named here). */
static const char *const s_data_science_preload[] = {
    "_strptime", "encodings.latin_1", "encodings.ascii", "encodings.utf_16", "encodings.utf_32",
    "encodings.cp1252", "encodings.idna", "encodings.raw_unicode_escape",
    "encodings.unicode_escape", "xml.etree.ElementTree", "xml.etree.ElementPath", "json.decoder",
    "json.encoder", "json.scanner", "email.utils", "html.entities", "ast", "traceback", "linecache",
    "importlib.resources", "zoneinfo._tzpath", "zoneinfo._common", "tomllib", "pathlib",
    "numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial", "numpy.ma",
    "scipy.stats", "scipy.optimize", "scipy.linalg", "scipy.integrate", "scipy.interpolate",
    "scipy.signal", "scipy.special", "scipy.sparse", "scipy.sparse.linalg", "scipy.fft",
    "scipy.spatial", "scipy.ndimage", "scipy.cluster", "scipy.cluster.hierarchy",
    "scipy.constants", "scipy.io", "matplotlib.pyplot", "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg", "matplotlib.backends.backend_pdf",
    "matplotlib.colors", "matplotlib.cm", "matplotlib.patches", "matplotlib.ticker",
    "matplotlib.dates", "matplotlib.gridspec", "mpl_toolkits.mplot3d", "pandas.plotting",
    "sympy.plotting", "sympy.printing.pretty", "sympy.printing.latex", "sympy.parsing.sympy_parser",
    NULL,
};

/* Debian installs numpy & co. here; the embedded interpreter runs with -I -S and would not
 * look there otherwise. */
static const char *const s_dist_packages[] = {"/usr/lib/python3/dist-packages", NULL};

/* matplotlib's data (style sheets, the DejaVu fonts it falls back to for glyphs the warm-up did
 * not load) beside the time zone database. */
static const char *const s_data_science_ro[] = {"/usr/share/zoneinfo", "/usr/share/matplotlib",
                                                NULL};

/* The IANA time zone database, so zoneinfo.ZoneInfo("Europe/Paris") works: mounted read-only,
 * readable through Landlock, and the only path the audit hook lets open() reach. */
static const char *const s_tzdata[] = {"/usr/share/zoneinfo", NULL};

const profile_t profiles[] = {
    {
        .name = "python.basic",
        .summary = "Python 3.11 with a safe subset of the standard library; no filesystem, "
                   "no network, no processes",
        .modules = s_basic_modules,
        .preload = s_basic_preload,
        .ro_paths = s_tzdata,
        .defaults = {.wall_ms = 30000, .cpu_ms = 30000, .memory_mb = 256,
                     .output_bytes = 1 << 20, .nofile = 16},
        .max = {.wall_ms = 300000, .cpu_ms = 300000, .memory_mb = 2048,
                .output_bytes = 8 << 20, .nofile = 64},
    },
    {
        .name = "python.filesystem",
        .summary = "python.basic plus a private scratch directory: the call's files are there, "
                   "open() and pathlib read and write it, and what the code writes comes back",
        .modules = s_filesystem_modules,
        .preload = s_basic_preload,
        .ro_paths = s_tzdata,
        .workspace = 1,
        .workspace_mb = 64,
        .defaults = {.wall_ms = 30000, .cpu_ms = 30000, .memory_mb = 256,
                     .output_bytes = 1 << 20, .nofile = 32},
        .max = {.wall_ms = 300000, .cpu_ms = 300000, .memory_mb = 2048,
                .output_bytes = 8 << 20, .nofile = 64},
    },
    {
        .name = "python.data_science",
        .summary = "numpy, pandas, scipy, matplotlib (figures come back as PNG images) and sympy, "
                   "with a private scratch directory for the call's files; one BLAS thread",
        .modules = s_data_science_modules,
        .preload = s_data_science_preload,
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

const profile_t *profile_for_dependencies(const char *const *names, size_t n,
                                          int (*keep)(const profile_t *, void *), void *arg)
{
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        int all = !keep || keep(p, arg);
        for (size_t k = 0; k < n && all; k++) all = profile_allows(p, names[k]);
        if (all) return p;
    }
    return NULL;
}
