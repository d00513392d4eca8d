/* common/buf.h — a growable byte buffer: the one place snakepit assembles text (metrics,
 * HTTP bodies) and binary messages. Allocation failure aborts: every component treats OOM in
 * its own bookkeeping as fatal and lets the supervisor restart it. */
#ifndef SP_BUF_H
#define SP_BUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data; /* NUL-terminated for convenience; len excludes the terminator */
    size_t   len;
    size_t   cap;
} buf_t;

void  buf_init(buf_t *b);
void  buf_free(buf_t *b);
void  buf_reset(buf_t *b);
void  buf_reserve(buf_t *b, size_t extra);
void  buf_append(buf_t *b, const void *data, size_t len);
void  buf_puts(buf_t *b, const char *s);
void  buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *buf_steal(buf_t *b, size_t *len); /* hands the bytes to the caller, leaves b empty */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
