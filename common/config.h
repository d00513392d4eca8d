/* common/config.h — one struct per component, filled in this order: compiled defaults, then
 * a config file (`--config FILE`, lines `name = value`, # comments), then the environment
 * (`SNAKEPIT_<NAME>` with dashes as underscores, upper case), then command-line flags
 * (`--name value` or `--name=value`; `--flag` alone sets a bool). The same option table
 * prints `--help`, so the help text cannot drift from what is parsed. */
#ifndef SP_CONFIG_H
#define SP_CONFIG_H
#include <stddef.h>
#include <stdio.h>

typedef enum {
    CFG_STR,  /* char[size] inside the struct */
    CFG_INT,  /* long */
    CFG_BOOL, /* int, 0 or 1; accepts 1/0/true/false/yes/no/on/off */
    CFG_LIST, /* char[size], comma-separated; repeated flags append */
} cfg_type_t;

typedef struct {
    const char *name;   /* flag name without dashes: "http" */
    cfg_type_t  type;
    size_t      offset; /* offsetof(struct, field) */
    size_t      size;   /* for CFG_STR / CFG_LIST: sizeof the array */
    long        min, max; /* for CFG_INT; min == max means unbounded */
    const char *metavar;  /* "HOST:PORT" */
    const char *help;
} cfg_opt_t;

#define CFG_OPT_STR(st, field, name, metavar, help)                                               \
    {name, CFG_STR, offsetof(st, field), sizeof(((st *)0)->field), 0, 0, metavar, help}
#define CFG_OPT_LIST(st, field, name, metavar, help)                                              \
    {name, CFG_LIST, offsetof(st, field), sizeof(((st *)0)->field), 0, 0, metavar, help}
#define CFG_OPT_INT(st, field, name, lo, hi, metavar, help)                                       \
    {name, CFG_INT, offsetof(st, field), sizeof(long), lo, hi, metavar, help}
#define CFG_OPT_BOOL(st, field, name, help)                                                       \
    {name, CFG_BOOL, offsetof(st, field), sizeof(int), 0, 0, NULL, help}
#define CFG_OPT_END {NULL, 0, 0, 0, 0, 0, NULL, NULL}

/* A one-letter flag for an option of the table: `-t 5` and `-t5` (getopt style) mean
 * `--timeout 5`; a bool's letter takes no value. */
typedef struct {
    char        letter;
    const char *name; /* the option's long name */
} cfg_short_t;
#define CFG_SHORT_END {0, NULL}

typedef enum { CONFIG_OK = 0, CONFIG_HELP = 1, CONFIG_ERROR = -1 } config_rc_t;

/* Parses into conf (already holding the defaults). Positional arguments are collected into
 * rest (up to *n_rest, which is updated); a "--" ends flag parsing. Returns CONFIG_HELP when
 * --help was asked for, CONFIG_ERROR with a message in err. */
config_rc_t config_load(void *conf, const cfg_opt_t *opts, int argc, char **argv, char **rest,
                        int *n_rest, char *err, size_t errlen);
/* The same, with one-letter flags for some options (shorts ends with CFG_SHORT_END). */
config_rc_t config_load_short(void *conf, const cfg_opt_t *opts, const cfg_short_t *shorts,
                              int argc, char **argv, char **rest, int *n_rest, char *err,
                              size_t errlen);

/* Sets one option by name from text, as a flag would. */
int config_set(void *conf, const cfg_opt_t *opts, const char *name, const char *value, int append,
               char *err, size_t errlen);

/* defaults: a struct holding each option's default, printed beside it; NULL prints none. */
void config_usage(FILE *out, const char *usage, const char *summary, const cfg_opt_t *opts,
                  const void *defaults);
/* The same, naming each option's letter (`-t, --timeout S`). */
void config_usage_short(FILE *out, const char *usage, const char *summary, const cfg_opt_t *opts,
                        const cfg_short_t *shorts, const void *defaults);

#endif
