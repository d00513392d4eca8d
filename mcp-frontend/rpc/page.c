/* mcp-frontend/rpc/page.c — see page.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"

int page_offset(call_t *c, const char *prefix, size_t *offset)
{
    const char *cursor = call_str(c, "cursor");
    char msg[96];
    *offset = 0;
    if (json_object_get(c->params, "cursor") && !cursor) {
        snprintf(msg, sizeof msg, "%.40s: cursor must be a string", c->method);
        call_error(c, RPC_INVALID_PARAMS, msg, NULL);
        return -1;
    }
    if (!cursor) return 0;
    char *end;
    size_t pl = strlen(prefix);
    if (strncmp(cursor, prefix, pl) != 0 || cursor[pl] != ':' ||
        (*offset = strtoul(cursor + pl + 1, &end, 10), *end)) {
        snprintf(msg, sizeof msg, "%.40s: unknown cursor", c->method);
        call_error(c, RPC_INVALID_PARAMS, msg, NULL);
        return -1;
    }
    return 0;
}

void page_cursor(char out[48], const char *prefix, size_t offset)
{
    snprintf(out, 48, "%.24s:%zu", prefix, offset);
}

void page_reply(call_t *c, const json_t *all, const char *key, const char *prefix, long page_size)
{
    size_t start, n = json_array_size(all), page = (size_t)page_size;
    if (page_offset(c, prefix, &start) < 0) return;
    if (start > n) {
        call_error(c, RPC_INVALID_PARAMS, "unknown cursor", NULL);
        return;
    }
    json_t *list = json_array();
    for (size_t i = start; i < n && i < start + page; i++)
        json_array_append(list, json_array_get(all, i));
    json_t *result = json_object();
    json_object_set_new(result, key, list);
    if (start + page < n) {
        char next[48];
        page_cursor(next, prefix, start + page);
        json_object_set_new(result, "nextCursor", json_string(next));
    }
    call_reply(c, result);
}
