/* common/config.c — see config.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const cfg_opt_t *s_find(const cfg_opt_t *opts, const char *name, size_t len)
{
    for (const cfg_opt_t *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

static int s_parse_bool(const char *v, int *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

static int s_set(void *conf, const cfg_opt_t *o, const char *value, int append, char *err,
                 size_t errlen)
{
    char *field = (char *)conf + o->offset;
    switch (o->type) {
    case CFG_STR:
        if (strlen(value) >= o->size) {
            snprintf(err, errlen, "--%s: value longer than %zu bytes", o->name, o->size - 1);
            return -1;
        }
        strcpy(field, value);
        return 0;
    case CFG_LIST: {
        size_t have = append ? strlen(field) : 0;
        size_t need = have + (have ? 1 : 0) + strlen(value);
        if (need >= o->size) {
            snprintf(err, errlen, "--%s: list longer than %zu bytes", o->name, o->size - 1);
            return -1;
        }
        if (have) field[have++] = ',';
        strcpy(field + have, value);
        return 0;
    }
    case CFG_INT: {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end) {
            snprintf(err, errlen, "--%s: '%s' is not an integer", o->name, value);
            return -1;
        }
        if (o->min != o->max && (v < o->min || v > o->max)) {
            snprintf(err, errlen, "--%s: %ld is outside %ld..%ld", o->name, v, o->min, o->max);
            return -1;
        }
        *(long *)(void *)field = v;
        return 0;
    }
    case CFG_BOOL:
        if (s_parse_bool(value, (int *)(void *)field) < 0) {
            snprintf(err, errlen, "--%s: '%s' is not a boolean", o->name, value);
            return -1;
        }
        return 0;
    }
    return -1;
}

int config_set(void *conf, const cfg_opt_t *opts, const char *name, const char *value, int append,
               char *err, size_t errlen)
{
    const cfg_opt_t *o = s_find(opts, name, strlen(name));
    if (!o) {
        snprintf(err, errlen, "unknown option '%s'", name);
        return -1;
    }
    return s_set(conf, o, value, append, err, errlen);
}

static char *s_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

static int s_load_file(void *conf, const cfg_opt_t *opts, const char *path, char *err,
                       size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "config %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int  lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *s = s_trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "config %s:%d: expected 'name = value'", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *name = s_trim(s), *value = s_trim(eq + 1);
        const cfg_opt_t *o = s_find(opts, name, strlen(name));
        if (!o) {
            snprintf(err, errlen, "config %s:%d: unknown option '%s'", path, lineno, name);
            rc = -1;
            break;
        }
        rc = s_set(conf, o, value, 0, err, errlen);
    }
    fclose(f);
    return rc;
}

static int s_load_env(void *conf, const cfg_opt_t *opts, char *err, size_t errlen)
{
    for (const cfg_opt_t *o = opts; o->name; o++) {
        char var[128] = "SNAKEPIT_";
        size_t j = strlen(var);
        for (const char *p = o->name; *p && j + 1 < sizeof var; p++)
            var[j++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        var[j] = '\0';
        const char *v = getenv(var);
        if (v && s_set(conf, o, v, 0, err, errlen) < 0) return -1;
    }
    return 0;
}

/* The option a short flag names, or NULL. */
static const cfg_opt_t *s_find_short(const cfg_opt_t *opts, const cfg_short_t *shorts, char letter)
{
    for (const cfg_short_t *s = shorts; s && s->letter; s++)
        if (s->letter == letter) return s_find(opts, s->name, strlen(s->name));
    return NULL;
}

/* The flag argv[*i] names (`--name`, `--name=value`, `-x`, `-xvalue`), and its value, taking
 * the next argument when the flag has none attached. NULL for an unknown flag (said in err);
 * *value NULL when a needed value is missing (said). */
static const cfg_opt_t *s_flag(const cfg_opt_t *opts, const cfg_short_t *shorts, int argc,
                               char **argv, int *i, const char **value, int *negated, char *err,
                               size_t errlen)
{
    const char *a = argv[*i], *attached = NULL;
    const cfg_opt_t *o;
    *value = NULL;
    *negated = 0;
    if (a[1] != '-') { /* -x, -xVALUE */
        o = s_find_short(opts, shorts, a[1]);
        if (!o) {
            snprintf(err, errlen, "unknown flag '%s' (see --help)", a);
            return NULL;
        }
        if (a[2]) attached = a + 2;
    } else {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        o = s_find(opts, name, nlen);
        if (!o && nlen > 3 && strncmp(name, "no-", 3) == 0 && !eq) {
            o = s_find(opts, name + 3, nlen - 3);
            if (o && o->type == CFG_BOOL) {
                *negated = 1;
                return o;
            }
            o = NULL;
        }
        if (!o) {
            snprintf(err, errlen, "unknown flag '--%.*s' (see --help)", (int)nlen, name);
            return NULL;
        }
        if (eq) attached = eq + 1;
    }
    if (attached) {
        if (o->type == CFG_BOOL && a[1] != '-') {
            snprintf(err, errlen, "-%c takes no value ('%s')", a[1], a);
            *value = NULL;
            return o;
        }
        *value = attached;
    } else if (o->type == CFG_BOOL) {
        *value = "1";
    } else if (*i + 1 < argc) {
        *value = argv[++*i];
    } else {
        snprintf(err, errlen, "--%s needs a value", o->name);
    }
    return o;
}

config_rc_t config_load(void *conf, const cfg_opt_t *opts, int argc, char **argv, char **rest,
                        int *n_rest, char *err, size_t errlen)
{
    return config_load_short(conf, opts, NULL, argc, argv, rest, n_rest, err, errlen);
}

config_rc_t config_load_short(void *conf, const cfg_opt_t *opts, const cfg_short_t *shorts,
                              int argc, char **argv, char **rest, int *n_rest, char *err,
                              size_t errlen)
{
    int max_rest = n_rest ? *n_rest : 0, got = 0;
    /* The file comes first in precedence order, wherever --config sits on the line. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        const char *path = NULL;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) path = argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0) path = argv[i] + 9;
        if (path && s_load_file(conf, opts, path, err, errlen) < 0) return CONFIG_ERROR;
    }
    if (s_load_env(conf, opts, err, errlen) < 0) return CONFIG_ERROR;

    /* A list flag replaces what defaults, file or environment gave; repeating it appends. */
    unsigned char seen[64] = {0};
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_positional || a[0] != '-' || strcmp(a, "-") == 0) {
            if (got >= max_rest) {
                snprintf(err, errlen, "unexpected argument '%s'", a);
                return CONFIG_ERROR;
            }
            rest[got++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return CONFIG_HELP;
        if (strcmp(a, "--config") == 0 || strncmp(a, "--config=", 9) == 0) {
            if (!a[8]) i++;
            continue;
        }
        const char *value;
        int negated;
        const cfg_opt_t *o = s_flag(opts, shorts, argc, argv, &i, &value, &negated, err, errlen);
        if (!o) return CONFIG_ERROR;
        if (negated) {
            *(int *)(void *)((char *)conf + o->offset) = 0;
            continue;
        }
        if (!value) return CONFIG_ERROR;
        size_t idx = (size_t)(o - opts);
        int append = o->type == CFG_LIST && idx < sizeof seen && seen[idx];
        if (idx < sizeof seen) seen[idx] = 1;
        if (s_set(conf, o, value, append, err, errlen) < 0) return CONFIG_ERROR;
    }
    if (n_rest) *n_rest = got;
    return CONFIG_OK;
}

void config_usage(FILE *out, const char *usage, const char *summary, const cfg_opt_t *opts,
                  const void *defaults)
{
    config_usage_short(out, usage, summary, opts, NULL, defaults);
}

void config_usage_short(FILE *out, const char *usage, const char *summary, const cfg_opt_t *opts,
                        const cfg_short_t *shorts, const void *defaults)
{
    fprintf(out, "usage: %s\n\n%s\n\noptions (also SNAKEPIT_<NAME> in the environment, or "
                 "`name = value` lines in --config FILE):\n",
            usage, summary);
    for (const cfg_opt_t *o = opts; o->name; o++) {
        char flag[96], letter[8] = "";
        for (const cfg_short_t *s = shorts; s && s->letter; s++)
            if (strcmp(s->name, o->name) == 0) snprintf(letter, sizeof letter, "-%c, ", s->letter);
        snprintf(flag, sizeof flag, "%s--%s%s%s", letter, o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        fprintf(out, "  %-28s %s", flag, o->help);
        if (!defaults) {
            fputc('\n', out);
            continue;
        }
        const char *field = (const char *)defaults + o->offset;
        switch (o->type) {
        case CFG_STR:
        case CFG_LIST:
            if (*field) fprintf(out, " [%s]", field);
            break;
        case CFG_INT: fprintf(out, " [%ld]", *(const long *)(const void *)field); break;
        case CFG_BOOL:
            if (*(const int *)(const void *)field) fprintf(out, " [on]");
            break;
        }
        fputc('\n', out);
    }
    fprintf(out, "  %-28s %s\n  %-28s %s\n", "--config FILE", "read options from FILE",
            "-h, --help", "show this help");
}
