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

#include "../common/clock.h"
#include "../common/config.h"
#include "../common/sha256.h"
#include "../proto/wire.h"
#include "farm.h"
#include "tenant.h"

void tenant_quota_defaults(tenant_quota_t *q)
{
    memset(q, 0, sizeof *q);
    snprintf(q->rate, sizeof q->rate, "10");
    q->burst = 20;
    q->max_concurrency = 4;
    q->max_timeout_s = 300;
    q->max_memory_mb = 2048;
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

/* The session quotas given (issue 12); the others stay as they are. */
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
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].value > 0 &&
            s_run(c, err, errlen, "HSET", "HSET sp:t:%s %s %ld", name, rows[i].field,
                  rows[i].value) < 0)
            return -1;
    return 0;
}

int tenant_store(redisContext *c, const char *name, const tenant_quota_t *q, const char *key,
                 char *err, size_t errlen)
{
    char digest[65], old[65] = "";
    sha256_hex(key, strlen(key), digest);
    redisReply *r = redisCommand(c, "HGET sp:t:%s key_sha256", name);
    if (r && r->type == REDIS_REPLY_STRING) snprintf(old, sizeof old, "%s", r->str);
    if (r) freeReplyObject(r);
    char created[32], conc[32], tmo[32], mem[32], burst[32];
    snprintf(created, sizeof created, "%llu", (unsigned long long)clock_wall_ms());
    snprintf(conc, sizeof conc, "%ld", q->max_concurrency);
    snprintf(tmo, sizeof tmo, "%ld", q->max_timeout_s);
    snprintf(mem, sizeof mem, "%ld", q->max_memory_mb);
    snprintf(burst, sizeof burst, "%ld", q->burst);
    if (s_run(c, err, errlen, "HSETNX", "HSETNX sp:t:%s created_ms %s", name, created) < 0 ||
        s_run(c, err, errlen, "HSET",
              "HSET sp:t:%s rate %s burst %s max_concurrency %s max_timeout_s %s max_memory_mb %s "
              "profiles %s key_sha256 %s",
              name, q->rate, burst, conc, tmo, mem, q->profiles, digest) < 0 ||
        s_store_session_quotas(c, name, q, err, errlen) < 0 ||
        s_run(c, err, errlen, "SET", "SET sp:key:%s %s", digest, name) < 0 ||
        s_run(c, err, errlen, "SADD", "SADD sp:tenants %s", name) < 0)
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
    redisReply *r = redisCommand(c, "GET sp:key:%s", digest);
    int         mapped = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "local") == 0;
    if (r) freeReplyObject(r);
    r = redisCommand(c, "EXISTS sp:t:local");
    int exists = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r) freeReplyObject(r);
    if (!mapped || !exists) {
        tenant_quota_t q;
        tenant_quota_defaults(&q);
        /* The developer's own tenant: generous, since it is theirs alone. */
        snprintf(q.rate, sizeof q.rate, "100");
        q.burst = 200;
        q.max_concurrency = 64;
        if (exists) { /* keep quotas someone set; only the key mapping was missing */
            if (s_run(c, err, errlen, "SET", "SET sp:key:%s local", digest) < 0 ||
                s_run(c, err, errlen, "HSET", "HSET sp:t:local key_sha256 %s", digest) < 0)
                return -1;
        } else if (tenant_store(c, "local", &q, key, err, errlen) < 0) {
            return -1;
        }
    }
    memcpy(key_out, key, 68);
    return 0;
}

/* ---- commands -------------------------------------------------------------------------- */

typedef struct {
    char           state_dir[PATH_MAX];
    char           redis[PATH_MAX + 16];
    tenant_quota_t q;
    int            json;
} tenant_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(tenant_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(tenant_args_t, redis, "redis", "URL", "Redis of the farm (default: the state dir's)"),
    CFG_OPT_STR(tenant_args_t, q.rate, "rate", "R", "requests per second (e.g. 10, 0.5, or 10/s)"),
    CFG_OPT_INT(tenant_args_t, q.burst, "burst", 1, 1000000, "B", "requests allowed at once above the rate"),
    CFG_OPT_INT(tenant_args_t, q.max_concurrency, "max-concurrency", 1, 100000, "C", "jobs running at once"),
    CFG_OPT_INT(tenant_args_t, q.max_timeout_s, "max-timeout", 1, 3600, "S", "longest timeout a call may ask"),
    CFG_OPT_INT(tenant_args_t, q.max_memory_mb, "max-memory", 16, 1 << 20, "MB", "most memory a call may ask"),
    CFG_OPT_INT(tenant_args_t, q.max_sessions, "max-sessions", 0, 100000, "N",
                "sessions open at once (default 8)"),
    CFG_OPT_INT(tenant_args_t, q.max_session_memory_mb, "max-session-memory", 0, 1 << 24, "MB",
                "memory limits of its open sessions together (default 4096)"),
    CFG_OPT_INT(tenant_args_t, q.max_idle_timeout_s, "max-idle-timeout", 0, 7 * 86400, "S",
                "longest idle timeout a session may ask (default 3600)"),
    CFG_OPT_INT(tenant_args_t, q.max_snapshots, "max-snapshots", 0, 100000, "N",
                "state snapshots kept (default 32)"),
    CFG_OPT_INT(tenant_args_t, q.max_snapshot_mb, "max-snapshot-mb", 0, 1 << 20, "MB",
                "bytes of its snapshots together (default 256)"),
    CFG_OPT_LIST(tenant_args_t, q.profiles, "profiles", "LIST", "profiles it may use (default: all)"),
    CFG_OPT_BOOL(tenant_args_t, json, "json", "print JSON"),
    CFG_OPT_END,
};

static const char *s_usage =
    "snakepit tenant add NAME [--rate R/s] [--burst B] [--max-concurrency C] [--max-timeout S]\n"
    "                         [--max-memory MB] [--profiles a,b] [--max-sessions N]\n"
    "                         [--max-session-memory MB] [--max-idle-timeout S]\n"
    "                         [--max-snapshots N] [--max-snapshot-mb MB]\n"
    "       snakepit tenant list | show NAME | rotate-key NAME | remove NAME\n"
    "       (all take --state-dir DIR or --redis URL)";

static redisContext *s_connect(tenant_args_t *a)
{
    return farm_connect("snakepit tenant", a->state_dir, a->redis, sizeof a->redis);
}

static int s_show(redisContext *c, const char *name, int json)
{
    redisReply *r = redisCommand(c, "HGETALL sp:t:%s", name);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        fprintf(stderr, "snakepit tenant: no tenant '%s'\n", name);
        if (r) freeReplyObject(r);
        return 1;
    }
    if (json) printf("{\"tenant\":\"%s\"", name);
    else printf("%s\n", name);
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *k = r->element[i]->str, *v = r->element[i + 1]->str;
        if (strcmp(k, "key_sha256") == 0) continue; /* not secret, but useless to show */
        if (json) printf(",\"%s\":\"%s\"", k, v);
        else printf("  %-16s %s\n", k, v[0] ? v : "(all)");
    }
    if (json) printf("}\n");
    freeReplyObject(r);
    return 0;
}

int tenant_main(int argc, char **argv)
{
    tenant_args_t a = {0}, defaults = {0};
    tenant_quota_defaults(&defaults.q);
    a = defaults;
    char *rest[4];
    int   n_rest = 4;
    char  err[512];
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, s_usage, "Manage tenants: API keys and quotas.", s_opts, &defaults);
        return 0;
    case CONFIG_ERROR: fprintf(stderr, "snakepit tenant: %s\n", err); return 2;
    case CONFIG_OK: break;
    }
    if (n_rest < 1) {
        fprintf(stderr, "usage: %s\n", s_usage);
        return 2;
    }
    const char *cmd = rest[0], *name = n_rest > 1 ? rest[1] : NULL;
    size_t      rl = strlen(a.q.rate);
    if (rl > 2 && strcmp(a.q.rate + rl - 2, "/s") == 0) a.q.rate[rl - 2] = '\0';
    char *end;
    if (strtod(a.q.rate, &end) <= 0 || *end) {
        fprintf(stderr, "snakepit tenant: --rate must be a positive number of requests per second\n");
        return 2;
    }
    int needs_name = strcmp(cmd, "list") != 0;
    if (needs_name && (!name || !wire_name_ok(name, strlen(name)))) {
        fprintf(stderr, "snakepit tenant %s: a tenant name of 1-64 [A-Za-z0-9._-] is needed\n", cmd);
        return 2;
    }
    redisContext *c = s_connect(&a);
    if (!c) return 1;
    int rc = 0;
    if (strcmp(cmd, "add") == 0 || strcmp(cmd, "rotate-key") == 0) {
        int is_add = cmd[0] == 'a';
        redisReply *r = redisCommand(c, "EXISTS sp:t:%s", name);
        int exists = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        if (r) freeReplyObject(r);
        if (is_add == exists) {
            fprintf(stderr, "snakepit tenant %s: tenant '%s' %s\n", cmd, name,
                    exists ? "already exists (use rotate-key)" : "does not exist");
            rc = 1;
        } else {
            tenant_quota_t q = a.q;
            if (!is_add) { /* keep the quotas, replace only the key */
                r = redisCommand(c, "HMGET sp:t:%s rate burst max_concurrency max_timeout_s max_memory_mb profiles", name);
                if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 6) {
                    if (r->element[0]->str) snprintf(q.rate, sizeof q.rate, "%s", r->element[0]->str);
                    if (r->element[1]->str) q.burst = atol(r->element[1]->str);
                    if (r->element[2]->str) q.max_concurrency = atol(r->element[2]->str);
                    if (r->element[3]->str) q.max_timeout_s = atol(r->element[3]->str);
                    if (r->element[4]->str) q.max_memory_mb = atol(r->element[4]->str);
                    if (r->element[5]->str) snprintf(q.profiles, sizeof q.profiles, "%s", r->element[5]->str);
                }
                if (r) freeReplyObject(r);
            }
            char key[68];
            tenant_new_key(key);
            if (tenant_store(c, name, &q, key, err, sizeof err) < 0) {
                fprintf(stderr, "snakepit tenant %s: %s\n", cmd, err);
                rc = 1;
            } else if (a.json) {
                printf("{\"tenant\":\"%s\",\"api_key\":\"%s\"}\n", name, key);
            } else {
                printf("%s\n", key);
                fprintf(stderr, "tenant %s: new API key printed above; it is shown only once\n", name);
            }
        }
    } else if (strcmp(cmd, "list") == 0) {
        redisReply *r = redisCommand(c, "SMEMBERS sp:tenants");
        if (r && r->type == REDIS_REPLY_ARRAY)
            for (size_t i = 0; i < r->elements; i++) s_show(c, r->element[i]->str, a.json);
        if (r) freeReplyObject(r);
    } else if (strcmp(cmd, "show") == 0) {
        rc = s_show(c, name, a.json);
    } else if (strcmp(cmd, "remove") == 0) {
        redisReply *r = redisCommand(c, "HGET sp:t:%s key_sha256", name);
        if (!r || r->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "snakepit tenant remove: no tenant '%s'\n", name);
            rc = 1;
        } else if (s_run(c, err, sizeof err, "DEL", "DEL sp:key:%s sp:t:%s", r->str, name) < 0 ||
                   s_run(c, err, sizeof err, "SREM", "SREM sp:tenants %s", name) < 0) {
            fprintf(stderr, "snakepit tenant remove: %s\n", err);
            rc = 1;
        } else {
            fprintf(stderr, "tenant %s removed; its key no longer works\n", name);
        }
        if (r) freeReplyObject(r);
    } else {
        fprintf(stderr, "snakepit tenant: unknown command '%s'\nusage: %s\n", cmd, s_usage);
        rc = 2;
    }
    redisFree(c);
    return rc;
}
