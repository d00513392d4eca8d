/* cli/etcconf.c — see etcconf.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcconf.h"

/* the front-end's file first: it names the Redis and the broker clients use */
static const char *const s_files[] = {"mcp.conf", "broker.conf", "executor.conf", NULL};

const char *etcconf_dir(void)
{
    const char *dir = getenv("SNAKEPIT_CONF_DIR");
    return dir && *dir ? dir : ETCCONF_DIR;
}

static char *s_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* 1 when the file at path sets name (value into out), 0 when it does not, -1 when it cannot
 * be read (errno set). */
static int s_lookup(const char *path, const char *name, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = s_trim(line), *eq = strchr(s, '=');
        if (*s == '#' || !eq) continue;
        *eq = '\0';
        if (strcmp(s_trim(s), name) != 0) continue;
        snprintf(out, cap, "%s", s_trim(eq + 1));
        found = 1; /* the last line wins, as config_load reads it */
    }
    fclose(f);
    return found;
}

int etcconf_get(const char *name, char *out, size_t cap, char *where, size_t wherecap, char *err,
                size_t errlen)
{
    const char *dir = etcconf_dir();
    int unreadable = 0;
    snprintf(err, errlen, "no file in %s sets %s", dir, name);
    for (const char *const *f = s_files; *f; f++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        int rc = s_lookup(path, name, out, cap);
        if (rc > 0) {
            snprintf(where, wherecap, "%s", path);
            return 1;
        }
        if (rc < 0 && errno != ENOENT && !unreadable++)
            snprintf(err, errlen,
                     "%s cannot be read (%s): it is root:snakepit 0640, so run this as root or as "
                     "a member of the group snakepit",
                     path, strerror(errno));
    }
    return 0;
}
