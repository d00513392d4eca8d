/* common/log.c — the logfmt line writer behind log.h. One write(2) per line so lines from
 * concurrent processes sharing a stderr do not interleave mid-line. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static char        s_component[32] = "snakepit";
static log_level_t s_level = LOG_INFO;

static const char *s_names[] = {"debug", "info", "warn", "error", "off"};

void log_init(const char *component, log_level_t level)
{
    snprintf(s_component, sizeof s_component, "%s", component);
    s_level = level;
}

void log_set_level(log_level_t level)
{
    s_level = level;
}

log_level_t log_get_level(void)
{
    return s_level;
}

int log_level_parse(const char *name, log_level_t *out)
{
    for (int i = 0; i <= LOG_OFF; i++)
        if (strcmp(name, s_names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    if (strcmp(name, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return -1;
}

void log_emit(log_level_t level, const char *fmt, ...)
{
    if (level < s_level || level >= LOG_OFF) return;
    char            line[2048];
    struct timespec ts;
    struct tm       tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "level=%s ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ comp=%s ",
                     s_names[level], tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, s_component);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w; /* nowhere left to report a failed log write */
}

const char *log_quote(char *dst, size_t cap, const char *src)
{
    if (cap == 0) return dst;
    if (!src) src = "";
    int    needs = *src == '\0';
    size_t j = 0;
    for (const char *p = src; *p; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20) needs = 1;
    if (needs && j + 1 < cap) dst[j++] = '"';
    for (const unsigned char *p = (const unsigned char *)src; *p && j + 5 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            dst[j++] = '\\';
            dst[j++] = (char)*p;
        } else if (*p < 0x20) {
            j += (size_t)snprintf(dst + j, cap - j, "\\x%02x", *p);
        } else {
            dst[j++] = (char)*p;
        }
    }
    if (needs && j + 1 < cap) dst[j++] = '"';
    dst[j] = '\0';
    return dst;
}
