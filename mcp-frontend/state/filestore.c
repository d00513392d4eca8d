/* mcp-frontend/state/filestore.c — see filestore.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/utf8.h"
#include "proto/job.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "filestore.h"

/* KEYS: the record, its files; ARGV: tenant, path */
static const char s_read_lua[] =
    "if redis.call('HGET', KEYS[1], 'tenant') ~= ARGV[1] then return false end\n"
    "return redis.call('HGET', KEYS[2], ARGV[2])\n";

static store_script_t *s_script; /* loaded on the first read; the store owns it */

typedef struct {
    call_t *call;
    char *uri;
    char *path;
} read_t;

static void s_on_file(void *arg, redisReply *reply)
{
    read_t *r = arg;
    call_t *c = r->call;
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        call_error(c, RPC_UNAVAILABLE, "the execution store is unreachable right now; try again shortly",
                   NULL);
    } else if (reply->type != REDIS_REPLY_STRING) {
        call_error(c, RPC_RESOURCE_NOT_FOUND, "Resource not found",
                   json_pack("{s:s}", "uri", r->uri));
    } else {
        const char *mime = rich_mime_of(r->path);
        int text = (!strncmp(mime, "text/", 5) || strstr(mime, "json") || strstr(mime, "xml") ||
                    strstr(mime, "yaml")) && utf8_valid(reply->str, reply->len);
        json_t *item = json_pack("{s:s,s:s}", "uri", r->uri, "mimeType", mime);
        if (text) {
            json_object_set_new(item, "text", json_stringn(reply->str, reply->len));
        } else {
            buf_t b;
            buf_init(&b);
            base64_encode(&b, reply->str, reply->len);
            json_object_set_new(item, "blob", json_stringn((const char *)b.data, b.len));
            buf_free(&b);
        }
        call_reply(c, json_pack("{s:[o]}", "contents", item));
    }
    call_release(c);
    free(r->uri);
    free(r->path);
    free(r);
}

void filestore_read(call_t *c, const char *id, const char *tail)
{
    const char *uri = call_str(c, "uri");
    buf_t path; /* NUL-terminated by buf.h */
    buf_init(&path);
    char err[200];
    if (rich_uri_path(tail, &path) < 0 || jobspec_check_path((const char *)path.data, err, sizeof err) < 0) {
        buf_free(&path);
        call_error(c, RPC_RESOURCE_NOT_FOUND, "Resource not found", json_pack("{s:s}", "uri", uri));
        return;
    }
    if (!s_script) s_script = store_script(c->fe->store, s_read_lua);
    read_t *r = xcalloc(1, sizeof *r);
    r->call = c;
    r->uri = xstrdup(uri);
    r->path = xstrdup((const char *)path.data);
    buf_free(&path);
    char record[64], files[96];
    snprintf(record, sizeof record, "sp:exec:%s", id);
    snprintf(files, sizeof files, "sp:exec:%s:files", id);
    const char *args[] = {record, files, c->tenant->name, r->path};
    call_hold(c);
    if (store_eval(c->fe->store, s_script, s_on_file, r, 2, 4, args) < 0) {
        call_release(c);
        call_error(c, RPC_UNAVAILABLE, "the execution store is unreachable right now; try again shortly",
                   NULL);
        free(r->uri);
        free(r->path);
        free(r);
    }
}
