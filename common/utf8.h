/* common/utf8.h — making bytes safe to put in JSON. What user code prints is bytes: it
 * may be cut mid-sequence by the output cap or simply not be UTF-8. JSON strings must be
 * valid UTF-8 (RFC 8259 §8.1), so every invalid or truncated sequence becomes U+FFFD, the
 * way Python's errors="replace" does it (one replacement per maximal invalid subpart). */
#ifndef SP_FE_UTF8_H
#define SP_FE_UTF8_H
#include <stddef.h>

#include "buf.h"

/* 1 when the bytes are valid UTF-8 without NUL bytes. */
int utf8_valid(const char *s, size_t len);
/* Appends s to out with invalid sequences (and NUL bytes) replaced by U+FFFD. */
void utf8_sanitize(buf_t *out, const char *s, size_t len);
/* The longest prefix of s, at most max bytes, that does not end inside a sequence. */
size_t utf8_prefix(const char *s, size_t len, size_t max);

#endif
