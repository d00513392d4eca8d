/* mcp-frontend/state/filestore.c — see filestore.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/utf8.h"
#include "proto/job.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "filestore.h"

/* KEYS: the tenant's set and total, the farm's set and total. ARGV: ttl ms, the tenant's
 * bytes and files at most, the farm's share (% of maxmemory), the execution id, the tenant,
 * then each linked file's size. Returns {verdicts, tenant bytes, tenant files, farm bytes,
 * farm bytes at most (-1: no maxmemory, no share), expiry ms}: verdict 1 kept, 2 over the
 * tenant's bytes, 3 over its files, 4 over the farm's share. A file counts as its size against
 * the tenant, and its size and a quarter (allocator rounding) against maxmemory. */
static const char s_admit_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local function prune(set, total)\n"
    "  local gone = redis.call('ZRANGEBYSCORE', set, '-inf', now)\n"
    "  if #gone > 0 then\n"
    "    local b = 0\n"
    "    for _, m in ipairs(gone) do b = b + (tonumber(string.match(m, ':(%d+)$')) or 0) end\n"
    "    redis.call('ZREMRANGEBYSCORE', set, '-inf', now)\n"
    "    redis.call('DECRBY', total, b)\n"
    "  end\n"
    "  if redis.call('ZCARD', set) == 0 then redis.call('DEL', total) return 0 end\n"
    "  return tonumber(redis.call('GET', total) or '0')\n"
    "end\n"
    "local tb, fb = prune(KEYS[1], KEYS[2]), prune(KEYS[3], KEYS[4])\n"
    "local tn = redis.call('ZCARD', KEYS[1])\n"
    "local info = redis.pcall('INFO', 'memory')\n"
    "local maxmem = type(info) == 'string' and tonumber(string.match(info, 'maxmemory:(%d+)')) "
    "or 0\n"
    "local fcap = -1\n"
    "if maxmem > 0 then fcap = math.floor(maxmem * tonumber(ARGV[4]) / 100 * 4 / 5) end\n"
    "local exp = now + tonumber(ARGV[1])\n"
    "local out, added = {}, 0\n"
    "for i = 7, #ARGV do\n"
    "  local n = tonumber(ARGV[i])\n"
    "  local v = 1\n"
    "  if tn + 1 > tonumber(ARGV[3]) then v = 3\n"
    "  elseif tb + n > tonumber(ARGV[2]) then v = 2\n"
    "  elseif fcap >= 0 and fb + n > fcap then v = 4 end\n"
    "  if v == 1 then\n"
    "    local m = ARGV[5] .. '/' .. (i - 6) .. ':' .. n\n"
    "    redis.call('ZADD', KEYS[1], exp, m)\n"
    "    redis.call('ZADD', KEYS[3], exp, ARGV[6] .. '/' .. m)\n"
    "    tb, tn, fb, added = tb + n, tn + 1, fb + n, added + n\n"
    "  end\n"
    "  out[#out + 1] = v\n"
    "end\n"
    "if added > 0 then\n"
    "  redis.call('INCRBY', KEYS[2], added)\n"
    "  redis.call('INCRBY', KEYS[4], added)\n"
    "end\n"
    "return {out, tb, tn, fb, fcap, exp}\n";

/* KEYS: the execution's files hash; ARGV: when it expires (ms since the epoch, the instant
 * its accounting ends), path, bytes, ... Idempotent (the journal may send it again), and the
 * hash never exists without its expiry: under maxmemory volatile-lru a key without one is
 * never evicted, and a Redis that died between an HSET and its expiry would keep it for good. */
static const char s_write_lua[] = "redis.call('HSET', KEYS[1], unpack(ARGV, 2))\n"
                                  "redis.call('PEXPIREAT', KEYS[1], ARGV[1])\n"
                                  "return 1\n";

struct filestore {
    store_t *store;
    filestore_conf_t conf;
    store_script_t *admit;
    filestore_stats_t stats;
};

/* An admission in flight. */
typedef struct {
    filestore_t *self;
    const result_t *res;
    char id[64];
    char tenant[65];
    long max_mb, max_files;
    size_t linked[RESULT_MAX_FILES]; /* indexes into res->files */
    size_t n;
    filestore_kept_fn *fn;
    void *arg;
} keep_t;

filestore_t *filestore_new(store_t *store, const filestore_conf_t *conf)
{
    filestore_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    self->conf = *conf;
    return self;
}

void filestore_destroy(filestore_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

const filestore_stats_t *filestore_stats(const filestore_t *self)
{
    return &self->stats;
}

const char *filestore_outcome_name(file_outcome_t why)
{
    static const char *const names[FILE__COUNT] = {
        [FILE_KEPT] = "kept",
        [FILE_OVER_TENANT_MB] = "max_linked_mb",
        [FILE_OVER_TENANT_FILES] = "max_linked_files",
        [FILE_OVER_FARM_SHARE] = "farm_share",
        [FILE_UNAVAILABLE] = "unavailable",
    };
    return names[why];
}

int filestore_has_links(const result_t *res)
{
    for (size_t i = 0; i < res->n_files; i++)
        if (rich_is_link(&res->files[i])) return 1;
    return 0;
}

static double s_mb(long long bytes)
{
    return (double)bytes / (1 << 20);
}

/* The note a file not kept carries instead of its link: the cap, whose it is, what holds it. */
static void s_note(const keep_t *k, file_unkept_t *u, long long tb, long long tn, long long fb,
                   long long fcap)
{
    long ttl_min = (k->self->conf.ttl_s + 59) / 60;
    switch (u->why) {
    case FILE_OVER_TENANT_MB:
        snprintf(u->note, sizeof u->note,
                 "not kept for resources/read: tenant %s's linked files already hold %.1f MB of "
                 "its %ld MB (max_linked_mb), written by its executions of the last %ld min; "
                 "they are released as they expire. Write smaller files, or ask the operator to "
                 "raise the cap",
                 k->tenant, s_mb(tb), k->max_mb, ttl_min);
        break;
    case FILE_OVER_TENANT_FILES:
        snprintf(u->note, sizeof u->note,
                 "not kept for resources/read: tenant %s already has %lld linked files, its cap "
                 "(max_linked_files %ld), written by its executions of the last %ld min; they "
                 "are released as they expire. Write fewer large files, or ask the operator to "
                 "raise the cap",
                 k->tenant, tn, k->max_files, ttl_min);
        break;
    case FILE_OVER_FARM_SHARE:
        snprintf(u->note, sizeof u->note,
                 "not kept for resources/read: the linked files of every tenant together already "
                 "take this farm's share of its store (%.1f of %.1f MB); they are released as "
                 "they expire (at most %ld min). Run it again later",
                 s_mb(fb), s_mb(fcap), ttl_min);
        break;
    default:
        snprintf(u->note, sizeof u->note,
                 "not kept for resources/read: the file store is unreachable right now; run the "
                 "code again to get this file");
        break;
    }
}

/* The kept files' bytes, expiring at exp_ms. */
static void s_write(keep_t *k, const int *kept, long long exp_ms)
{
    char key[96], exp[24];
    snprintf(key, sizeof key, "sp:exec:%s:files", k->id);
    snprintf(exp, sizeof exp, "%lld", exp_ms);
    const char *argv[2 + 2 * RESULT_MAX_FILES] = {key, exp};
    size_t len[2 + 2 * RESULT_MAX_FILES] = {strlen(key), strlen(exp)};
    int argc = 2;
    for (size_t i = 0; i < k->n; i++) {
        if (!kept[i]) continue;
        const result_file_t *f = &k->res->files[k->linked[i]];
        argv[argc] = f->path;
        len[argc++] = strlen(f->path);
        argv[argc] = f->data;
        len[argc++] = f->len;
        k->self->stats.kept_bytes += f->len;
    }
    if (argc > 2) store_write_eval(k->self->store, s_write_lua, 1, argc, argv, len, NULL, NULL);
}

static long long s_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

static void s_on_admitted(void *arg, redisReply *reply)
{
    keep_t *k = arg;
    filestore_t *self = k->self;
    file_unkept_t unkept[RESULT_MAX_FILES];
    int kept[RESULT_MAX_FILES] = {0};
    size_t n_unkept = 0;
    int ok = reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 6 &&
             reply->element[0]->type == REDIS_REPLY_ARRAY && reply->element[0]->elements == k->n;
    if (!ok && reply && reply->type == REDIS_REPLY_ERROR)
        log_warn("event=linked_files_failed job=%s error=\"%.200s\"", k->id, reply->str);
    long long tb = ok ? s_int(reply->element[1]) : 0, tn = ok ? s_int(reply->element[2]) : 0;
    long long fb = ok ? s_int(reply->element[3]) : 0, fcap = ok ? s_int(reply->element[4]) : -1;
    for (size_t i = 0; i < k->n; i++) {
        long long v = ok ? s_int(reply->element[0]->element[i]) : 0;
        file_outcome_t why = v == 1   ? FILE_KEPT
                             : v == 2 ? FILE_OVER_TENANT_MB
                             : v == 3 ? FILE_OVER_TENANT_FILES
                             : v == 4 ? FILE_OVER_FARM_SHARE
                                      : FILE_UNAVAILABLE;
        self->stats.files[why]++;
        if (why == FILE_KEPT) {
            kept[i] = 1;
            continue;
        }
        file_unkept_t *u = &unkept[n_unkept++];
        u->index = k->linked[i];
        u->why = why;
        s_note(k, u, tb, tn, fb, fcap);
        const result_file_t *f = &k->res->files[u->index];
        log_warn("event=linked_file_refused job=%s tenant=%s reason=%s bytes=%zu tenant_bytes=%lld "
                 "tenant_files=%lld farm_bytes=%lld farm_cap=%lld",
                 k->id, k->tenant, filestore_outcome_name(why), f->len, tb, tn, fb, fcap);
    }
    if (ok) s_write(k, kept, s_int(reply->element[5]));
    k->fn(k->arg, unkept, n_unkept);
    free(k);
}

void filestore_keep(filestore_t *self, const tenant_t *t, const char *id, const result_t *res,
                    filestore_kept_fn *fn, void *arg)
{
    keep_t *k = xcalloc(1, sizeof *k);
    *k = (keep_t){.self = self,
                  .res = res,
                  .max_mb = t->max_linked_mb,
                  .max_files = t->max_linked_files,
                  .fn = fn,
                  .arg = arg};
    snprintf(k->id, sizeof k->id, "%s", id);
    snprintf(k->tenant, sizeof k->tenant, "%s", t->name);
    for (size_t i = 0; i < res->n_files && k->n < RESULT_MAX_FILES; i++)
        if (rich_is_link(&res->files[i])) k->linked[k->n++] = i;
    char keys[4][128], ttl[24], max_b[24], max_n[24], share[24], sizes[RESULT_MAX_FILES][24];
    snprintf(keys[0], sizeof keys[0], "sp:t:{%s}:linked", t->name);
    snprintf(keys[1], sizeof keys[1], "sp:t:{%s}:linked_bytes", t->name);
    snprintf(keys[2], sizeof keys[2], "sp:linked");
    snprintf(keys[3], sizeof keys[3], "sp:linked_bytes");
    snprintf(ttl, sizeof ttl, "%lld", (long long)self->conf.ttl_s * 1000);
    snprintf(max_b, sizeof max_b, "%lld", (long long)t->max_linked_mb << 20);
    snprintf(max_n, sizeof max_n, "%ld", t->max_linked_files);
    snprintf(share, sizeof share, "%ld", self->conf.share_pct);
    const char *args[10 + RESULT_MAX_FILES] = {keys[0], keys[1], keys[2], keys[3], ttl,
                                               max_b,   max_n,   share,   k->id,   k->tenant};
    for (size_t i = 0; i < k->n; i++) {
        snprintf(sizes[i], sizeof sizes[i], "%zu", res->files[k->linked[i]].len);
        args[10 + i] = sizes[i];
    }
    if (!self->admit) self->admit = store_script(self->store, s_admit_lua);
    if (store_eval(self->store, self->admit, s_on_admitted, k, 4, 10 + (int)k->n, args) < 0)
        s_on_admitted(k, NULL); /* Redis away: nothing can be kept now */
}

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
