/* common/profiles.c — see profiles.h. Module lists follow the basic stdlib set of issue #3;
 * everything listed is pure computation once imported (no files, no network, no processes). */
#include <string.h>

#include "profiles.h"

static const char *const s_basic_modules[] = {
    "math", "cmath", "statistics", "decimal", "fractions", "numbers", "random", "collections",
    "collections.abc", "itertools", "functools", "heapq", "bisect", "array", "string", "re",
    "textwrap", "difflib", "unicodedata", "json", "csv", "base64", "binascii", "hashlib", "hmac",
    "secrets", "datetime", "calendar", "time", "uuid", "enum", "dataclasses", "typing", "copy",
    "pprint", "operator", "struct", "html", "html.parser", "xml.etree", "urllib.parse",
    "zoneinfo", "io", "abc", "contextlib", "graphlib", "colorsys", "keyword", "zlib",
    NULL,
};

/* Imported lazily by the modules above at first use; a child cannot read the filesystem, so
 * they must already be in sys.modules. */
static const char *const s_basic_preload[] = {
    "_strptime", "encodings.latin_1", "encodings.ascii", "encodings.utf_16", "encodings.utf_32",
    "encodings.cp1252", "encodings.idna", "encodings.raw_unicode_escape",
    "encodings.unicode_escape", "xml.etree.ElementTree", "xml.etree.ElementPath", "json.decoder",
    "json.encoder", "json.scanner", "email.utils", "html.entities", "ast", "traceback", "linecache",
    "importlib.resources", "zoneinfo._tzpath", "zoneinfo._common",
    NULL,
};

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
};
const size_t n_profiles = sizeof profiles / sizeof profiles[0];

const profile_t *profile_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < n_profiles; i++)
        if (strcmp(profiles[i].name, name) == 0) return &profiles[i];
    return NULL;
}

static long s_clamp(long v, long def, long max)
{
    if (v <= 0) v = def;
    return v > max ? max : v;
}

void profile_apply_limits(const profile_t *p, limits_t *l)
{
    l->wall_ms = s_clamp(l->wall_ms, p->defaults.wall_ms, p->max.wall_ms);
    l->cpu_ms = s_clamp(l->cpu_ms, p->defaults.cpu_ms, p->max.cpu_ms);
    l->memory_mb = s_clamp(l->memory_mb, p->defaults.memory_mb, p->max.memory_mb);
    l->output_bytes = s_clamp(l->output_bytes, p->defaults.output_bytes, p->max.output_bytes);
    l->nofile = s_clamp(l->nofile, p->defaults.nofile, p->max.nofile);
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
