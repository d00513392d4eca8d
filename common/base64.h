/* common/base64.h — Base64 (RFC 4648 §4, the standard alphabet with padding), the
 * encoding MCP uses for binary content: image blocks, and files that are not UTF-8 text, in
 * both directions. */
#ifndef SP_FE_BASE64_H
#define SP_FE_BASE64_H
#include <stddef.h>

#include "buf.h"

/* Appends the encoding of data to out. */
void base64_encode(buf_t *out, const void *data, size_t len);
/* Appends the decoded bytes to out; CR and LF are ignored (MIME line breaks). 0, or -1 when the
 * text is not base64 (then out holds a partial decoding the caller discards). */
int base64_decode(buf_t *out, const char *text, size_t len);

#endif
