/* common/log.h — one line per event, level first, then key=value pairs.
 *
 *   level=info ts=2026-11-22T01:45:00.123Z comp=broker event=dispatch job=... executor=...
 *
 * Logs go to stderr (fd 2) by default: the stdio MCP transport owns stdout, so nothing in
 * snakepit ever logs there. Callers pass the event and its pairs as a printf format. */
#ifndef SP_LOG_H
#define SP_LOG_H
#include <stddef.h>

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF } log_level_t;

void        log_init(const char *component, log_level_t level);
void        log_set_level(log_level_t level);
log_level_t log_get_level(void);
int         log_level_parse(const char *name, log_level_t *out); /* 0 or -1 */
void        log_emit(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_emit(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_emit(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_emit(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_emit(LOG_ERROR, __VA_ARGS__)

/* Copies src into dst (cap bytes, always terminated) so that it can stand as one logfmt
 * value: quotes when it holds spaces, escapes quotes, backslashes and control bytes. */
const char *log_quote(char *dst, size_t cap, const char *src);

#endif
