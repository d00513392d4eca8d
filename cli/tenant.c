/* cli/tenant.c — `snakepit tenant add|list|show|rotate-key|remove`; see tenant.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/sha256.h"
#include "common/tenant_ensure.h"
#include "proto/wire.h"
#include "cli/farm/farm.h"
#include "tenant.h"

void tenant_quota_defaults(tenant_quota_t *q)
{
    memset(q, 0, sizeof *q);
    snprintf(q->rate, sizeof q->rate, "10");
    q->burst = 20;
    q->max_concurrency = 4;
    q->max_timeout_s = 300;
    q->max_memory_mb = 2048;
    q->session_retention_s = -1;
}

void tenant_new_key(char out[68])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t           raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        fprintf(stderr, "snakepit: getrandom failed: %s\n", strerror(errno));
        exit(1); /* never hand out a guessable key */
    }
    memcpy(out, "sp_", 3);
    for (int i = 0; i < 32; i++) out[3 + 2 * i] = hex[raw[i] >> 4], out[4 + 2 * i] = hex[raw[i] & 15];
    out[67] = '\0';
}

static int s_reply_ok(redisReply *r, char *err, size_t errlen, const char *what)
{
    if (r && r->type != REDIS_REPLY_ERROR) return 0;
    snprintf(err, errlen, "redis %s: %s", what, r ? r->str : "no reply");
    return -1;
}

static int s_run(redisContext *c, char *err, size_t errlen, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = s_reply_ok(r, err, errlen, what);
    if (!r && c->err) snprintf(err, errlen, "redis %s: %s", what, c->errstr);
    if (r) freeReplyObject(r);
    return rc;
}

/* The session quotas and those of what it holds given; the others stay as
 * they are. */
static int s_store_session_quotas(redisContext *c, const char *name, const tenant_quota_t *q,
                                  char *err, size_t errlen)
{
    const struct {
        const char *field;
        long value;
    } rows[] = {
        {"max_sessions", q->max_sessions},
        {"max_session_memory_mb", q->max_session_memory_mb},
        {"max_idle_timeout_s", q->max_idle_timeout_s},
        {"max_snapshots", q->max_snapshots},
        {"max_snapshot_mb", q->max_snapshot_mb},
        {"max_listen_streams", q->max_listen_streams},
        {"max_sse_streams", q->max_sse_streams},
        {"max_tasks", q->max_tasks},
        {"max_linked_mb", q->max_linked_mb},
        {"max_linked_files", q->max_linked_files},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].value > 0 &&
            s_run(c, err, errlen, "HSET", "HSET sp:t:%s %s %ld", name, rows[i].field,
                  rows[i].value) < 0)
            return -1;
    /* 0 is a value here (its sessions are never hibernated): -1 is "not given" */
    if (q->session_retention_s >= 0 &&
        s_run(c, err, errlen, "HSET", "HSET sp:t:%s session_retention_s %ld", name,
              q->session_retention_s) < 0)
        return -1;
    return 0;
}

/* The network: its rules and caps as given, or none (the fields removed). */
static int s_store_egress(redisContext *c, const char *name, const tenant_quota_t *q, char *err,
                          size_t errlen)
{
    int rc = q->egress[0] ? s_run(c, err, errlen, "HSET", "HSET sp:t:%s egress %s", name, q->egress)
                          : s_run(c, err, errlen, "HDEL", "HDEL sp:t:%s egress", name);
    const struct {
        const char *field;
        long value;
    } caps[] = {{"egress_max_bytes", q->egress_max_bytes}, {"egress_max_conns", q->egress_max_conns}};
    for (size_t i = 0; rc == 0 && i < sizeof caps / sizeof caps[0]; i++)
        rc = caps[i].value > 0 ? s_run(c, err, errlen, "HSET", "HSET sp:t:%s %s %ld", name,
                                       caps[i].field, caps[i].value)
                               : s_run(c, err, errlen, "HDEL", "HDEL sp:t:%s %s", name,
                                       caps[i].field);
    return rc;
}

int tenant_quota_write(redisContext *c, const char *name, const tenant_quota_t *q, char *err,
                       size_t errlen)
{
    char created[32], conc[32], tmo[32], mem[32], burst[32];
    snprintf(created, sizeof created, "%llu", (unsigned long long)clock_wall_ms());
    snprintf(conc, sizeof conc, "%ld", q->max_concurrency);
    snprintf(tmo, sizeof tmo, "%ld", q->max_timeout_s);
    snprintf(mem, sizeof mem, "%ld", q->max_memory_mb);
    snprintf(burst, sizeof burst, "%ld", q->burst);
    if (s_run(c, err, errlen, "HSETNX", "HSETNX sp:t:%s created_ms %s", name, created) < 0 ||
        s_run(c, err, errlen, "HSET",
              "HSET sp:t:%s rate %s burst %s max_concurrency %s max_timeout_s %s max_memory_mb %s "
              "profiles %s",
              name, q->rate, burst, conc, tmo, mem, q->profiles) < 0 ||
        s_store_session_quotas(c, name, q, err, errlen) < 0 ||
        s_run(c, err, errlen, "SADD", "SADD sp:tenants %s", name) < 0)
        return -1;
    if (q->record_ttl_s > 0 && s_run(c, err, errlen, "HSET", "HSET sp:t:%s record_ttl_s %ld", name,
                                     q->record_ttl_s) < 0)
        return -1;
    if (q->record_max > 0 &&
        s_run(c, err, errlen, "HSET", "HSET sp:t:%s record_max %ld", name, q->record_max) < 0)
        return -1;
    return s_store_egress(c, name, q, err, errlen);
}

int tenant_store(redisContext *c, const char *name, const tenant_quota_t *q, const char *key,
                 char *err, size_t errlen)
{
    char digest[65], old[65] = "";
    sha256_hex(key, strlen(key), digest);
    redisReply *r = redisCommand(c, "HGET sp:t:%s key_sha256", name);
    if (r && r->type == REDIS_REPLY_STRING) snprintf(old, sizeof old, "%s", r->str);
    if (r) freeReplyObject(r);
    if (tenant_quota_write(c, name, q, err, errlen) < 0 ||
        s_run(c, err, errlen, "HSET", "HSET sp:t:%s key_sha256 %s", name, digest) < 0 ||
        s_run(c, err, errlen, "SET", "SET sp:key:%s %s", digest, name) < 0)
        return -1;
    if (old[0] && strcmp(old, digest) != 0 && s_run(c, err, errlen, "DEL", "DEL sp:key:%s", old) < 0)
        return -1;
    return 0;
}

static int s_read_key(const char *path, char key[68])
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[128] = "";
    int  ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!ok || strlen(line) != 67 || strncmp(line, "sp_", 3) != 0) return -1;
    memcpy(key, line, 68);
    return 0;
}

int tenant_ensure_local(redisContext *c, const char *key_file, char key_out[68], char *err,
                        size_t errlen)
{
    char key[68];
    int  fresh = s_read_key(key_file, key) < 0;
    if (fresh) {
        tenant_new_key(key);
        int fd = open(key_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, key, 67) != 67 || write(fd, "\n", 1) != 1) {
            snprintf(err, errlen, "writing %s: %s", key_file, strerror(errno));
            if (fd >= 0) close(fd);
            return -1;
        }
        close(fd);
    }
    char digest[65];
    sha256_hex(key, strlen(key), digest);
    if (tenant_ensure_named(c, "local", digest, err, errlen) < 0) return -1;
    memcpy(key_out, key, 68);
    return 0;
}

int tenant_ensure_named(redisContext *c, const char *name, const char *digest, char *err,
                        size_t errlen)
{
    tenant_ensure_t e;
    tenant_ensure_local_args(&e, name, digest, clock_wall_ms());
    const char *argv[3 + TENANT_ENSURE_ARGS] = {"EVAL", TENANT_ENSURE_LUA, "3"};
    for (int i = 0; i < e.argc; i++) argv[3 + i] = e.argv[i];
    redisReply *r = redisCommandArgv(c, 3 + e.argc, argv, NULL);
    int rc = s_reply_ok(r, err, errlen, "EVAL (the local tenant)");
    if (!r && c->err) snprintf(err, errlen, "redis: %s", c->errstr);
    if (rc == 0 && r->type == REDIS_REPLY_INTEGER && r->integer == 1) rc = 1;
    if (r) freeReplyObject(r);
    return rc;
}

int tenant_quota_read(redisContext *c, const char *name, tenant_quota_t *q)
{
    redisReply *r = redisCommand(c,
                                 "HMGET sp:t:%s rate burst max_concurrency max_timeout_s "
                                 "max_memory_mb profiles record_ttl_s record_max egress "
                                 "egress_max_bytes egress_max_conns",
                                 name);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 11;
    if (ok) {
        tenant_quota_defaults(q);
        if (r->element[0]->str) snprintf(q->rate, sizeof q->rate, "%s", r->element[0]->str);
        if (r->element[1]->str) q->burst = atol(r->element[1]->str);
        if (r->element[2]->str) q->max_concurrency = atol(r->element[2]->str);
        if (r->element[3]->str) q->max_timeout_s = atol(r->element[3]->str);
        if (r->element[4]->str) q->max_memory_mb = atol(r->element[4]->str);
        if (r->element[5]->str) snprintf(q->profiles, sizeof q->profiles, "%s", r->element[5]->str);
        if (r->element[6]->str) q->record_ttl_s = atol(r->element[6]->str);
        if (r->element[7]->str) q->record_max = atol(r->element[7]->str);
        if (r->element[8]->str) snprintf(q->egress, sizeof q->egress, "%s", r->element[8]->str);
        if (r->element[9]->str) q->egress_max_bytes = atol(r->element[9]->str);
        if (r->element[10]->str) q->egress_max_conns = atol(r->element[10]->str);
    }
    if (r) freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Counts only what has not lapsed, by Redis's clock as the front-ends' scripts do: a hold's
 * lease end, a linked file's expiry. */
static long s_live(redisContext *c, const char *key, long long now, long long *bytes)
{
    redisReply *r = redisCommand(c, "ZRANGEBYSCORE %s (%lld +inf", key, now);
    long n = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++, n++) {
        const char *colon = r->element[i]->str ? strrchr(r->element[i]->str, ':') : NULL;
        if (bytes && colon) *bytes += atoll(colon + 1);
    }
    if (r) freeReplyObject(r);
    return n;
}

int tenant_holding_read(redisContext *c, const char *name, tenant_holding_t *h)
{
    redisReply *t = redisCommand(c, "TIME");
    if (!t || t->type != REDIS_REPLY_ARRAY || t->elements != 2) {
        if (t) freeReplyObject(t);
        return -1;
    }
    long long now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    char key[160];
    *h = (tenant_holding_t){0};
    snprintf(key, sizeof key, "sp:t:{%s}:hold:listen", name);
    h->listen_streams = s_live(c, key, now, NULL);
    snprintf(key, sizeof key, "sp:t:{%s}:hold:sse", name);
    h->sse_streams = s_live(c, key, now, NULL);
    snprintf(key, sizeof key, "sp:t:{%s}:hold:task", name);
    h->tasks = s_live(c, key, now, NULL);
    snprintf(key, sizeof key, "sp:t:{%s}:linked", name);
    h->linked_files = s_live(c, key, now, &h->linked_bytes);
    return 0;
}

int tenant_exists(redisContext *c, const char *name)
{
    redisReply *r = redisCommand(c, "EXISTS sp:t:%s", name);
    int exists = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r) freeReplyObject(r);
    return exists;
}

int tenant_remove(redisContext *c, const char *name, char *err, size_t errlen)
{
    redisReply *r = redisCommand(c, "HGET sp:t:%s key_sha256", name);
    int rc = -1;
    if (!r || r->type != REDIS_REPLY_STRING)
        snprintf(err, errlen, "no tenant '%s'", name);
    else if (s_run(c, err, errlen, "DEL", "DEL sp:key:%s sp:t:%s", r->str, name) == 0 &&
             s_run(c, err, errlen, "SREM", "SREM sp:tenants %s", name) == 0)
        rc = 0;
    if (r) freeReplyObject(r);
    return rc;
}
