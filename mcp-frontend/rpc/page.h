/* mcp-frontend/rpc/page.h — pagination of the short lists that tools/list, resources/list and the
 * like return (MCP 2025-11-25 "Pagination"): a page is at most page_size entries; the cursor,
 * opaque to clients, is "<prefix>:<offset>", and nextCursor appears while entries remain. */
#ifndef SP_FE_PAGE_H
#define SP_FE_PAGE_H
#include <jansson.h>

#include "call.h"

/* Answers c with {key: [a page of all], nextCursor?}, or -32602 for a cursor not ours. */
void page_reply(call_t *c, const json_t *all, const char *key, const char *prefix, long page_size);
/* The offset in params.cursor ("<prefix>:<offset>"; 0 without a cursor). 0, or -1 when c has
 * been answered with -32602 (not a string, not ours). */
int page_offset(call_t *c, const char *prefix, size_t *offset);
/* A cursor for the page that starts at offset. */
void page_cursor(char out[48], const char *prefix, size_t offset);

#endif
