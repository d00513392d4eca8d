/* cli/backup.c — see backup.h. The file format is backup_file.h's; this file is the Redis side
 * and the two commands. Exit status: 0 done, 1 a key could not be restored or the file is
 * damaged, 64 usage, 69 Redis not reachable. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/redis_url.h"
#include "backup.h"
#include "backup_file.h"
#include "cli/farm/farm.h"

#define CHUNK 64 /* keys per pipelined round trip: bounds the values held at once */

typedef struct {
    char state_dir[PATH_MAX];
    char redis[PATH_MAX + 16];
    int no_records;
} backup_args_t;

static const cfg_opt_t s_backup_opts[] = {
    CFG_OPT_STR(backup_args_t, state_dir, "state-dir", "DIR",
                "farm state directory (its ready.json names the Redis)"),
    CFG_OPT_STR(backup_args_t, redis, "redis", "URL",
                "the farm's Redis (default: the state directory's, else /etc/snakepit's)"),
    CFG_OPT_BOOL(backup_args_t, no_records, "no-records",
                 "leave out execution records and their indexes (sp:exec:*)"),
    CFG_OPT_END,
};

static const cfg_opt_t s_restore_opts[] = {
    CFG_OPT_STR(backup_args_t, state_dir, "state-dir", "DIR",
                "farm state directory (its ready.json names the Redis)"),
    CFG_OPT_STR(backup_args_t, redis, "redis", "URL",
                "the farm's Redis (default: the state directory's, else /etc/snakepit's)"),
    CFG_OPT_END,
};

/* ---- which keys, and what they are --------------------------------------------------------- */

/* rebuilt within seconds by the running farm: never worth restoring */
static const char *const s_transient[] = {"sp:metrics:*", "sp:profiles", "sp:rl:*", NULL};
/* execution records and their indexes: the bulk of a farm's Redis (--no-records) */
static const char *const s_records[] = {"sp:exec:*", "sp:t:*:execs", "sp:t:*:tasks", NULL};

static int s_matches(const char *const *patterns, const char *key)
{
    for (; *patterns; patterns++)
        if (fnmatch(*patterns, key, 0) == 0) return 1;
    return 0;
}

enum {
    CAT_TENANTS,
    CAT_KEYS,
    CAT_USAGE,
    CAT_SNAPSHOTS,
    CAT_SESSIONS,
    CAT_RECORDS,
    CAT_OTHER,
    CATS
};
static const char *const s_cat_names[CATS] = {"tenants",   "API keys",        "usage days",
                                              "snapshots", "session records", "execution records",
                                              "other keys"};

/* What a key is, by the layout in README "Redis: what it holds". */
static int s_category(const char *key)
{
    if (!strncmp(key, "sp:key:", 7)) return CAT_KEYS;
    if (!strncmp(key, "sp:exec:", 8)) return strchr(key + 8, ':') ? CAT_OTHER : CAT_RECORDS;
    if (strncmp(key, "sp:t:", 5) != 0) return CAT_OTHER;
    const char *rest = key + 5, *close = strchr(rest, '}');
    if (*rest == '{' && close) {
        if (!strncmp(close + 1, ":snap:", 6)) return CAT_SNAPSHOTS;
        if (!strncmp(close + 1, ":psess:", 7)) return CAT_SESSIONS;
        return CAT_OTHER;
    }
    const char *colon = strchr(rest, ':');
    if (!colon) return CAT_TENANTS;
    return !strncmp(colon, ":use:", 5) ? CAT_USAGE : CAT_OTHER;
}

static void s_print_counts(const char *what, uint64_t n, const long counts[CATS])
{
    fprintf(stderr, "%s %llu keys (", what, (unsigned long long)n);
    for (int i = 0, first = 1; i < CATS; i++)
        if (counts[i]) {
            fprintf(stderr, "%s%ld %s", first ? "" : ", ", counts[i], s_cat_names[i]);
            first = 0;
        }
    fprintf(stderr, ")\n");
}

static char s_type(const char *name)
{
    static const struct {
        const char *name;
        char type;
    } types[] = {{"string", BACKUP_STRING}, {"hash", BACKUP_HASH}, {"list", BACKUP_LIST},
                 {"set", BACKUP_SET},       {"zset", BACKUP_ZSET}, {"stream", BACKUP_STREAM}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(name, types[i].name)) return types[i].type;
    return BACKUP_OTHER;
}

/* ---- backup -------------------------------------------------------------------------------- */

typedef struct {
    backup_writer_t *w;
    int no_records;
    long counts[CATS];
    long gone; /* deleted or expired between SCAN and DUMP */
} backup_run_t;

/* One chunk of a SCAN page: TYPE, PTTL and DUMP of each key pipelined, then written. */
static int s_backup_chunk(redisContext *c, redisReply **keys, size_t n, backup_run_t *b, char *err,
                          size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = keys[i]->str;
        size_t len = keys[i]->len;
        redisAppendCommand(c, "TYPE %b", k, len);
        redisAppendCommand(c, "PTTL %b", k, len);
        redisAppendCommand(c, "DUMP %b", k, len);
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r[3] = {NULL, NULL, NULL};
        for (int j = 0; j < 3; j++)
            if (redisGetReply(c, (void **)&r[j]) != REDIS_OK) {
                snprintf(err, errlen, "redis: %s", c->errstr);
                rc = -1;
            }
        if (rc == 0 && r[2] && r[2]->type == REDIS_REPLY_STRING && r[1] &&
            r[1]->type == REDIS_REPLY_INTEGER && r[1]->integer != -2 && r[0] &&
            r[0]->type == REDIS_REPLY_STATUS) {
            backup_record_t rec = {
                .type = s_type(r[0]->str),
                .key = keys[i]->str,
                .key_len = keys[i]->len,
                .expire_at_ms = r[1]->integer > 0 ? (int64_t)clock_wall_ms() + r[1]->integer : 0,
                .payload = r[2]->str,
                .payload_len = r[2]->len};
            rc = backup_writer_add(b->w, &rec, err, errlen);
            b->counts[s_category(keys[i]->str)]++;
        } else if (rc == 0) {
            b->gone++;
        }
        for (int j = 0; j < 3; j++)
            if (r[j]) freeReplyObject(r[j]);
        if (rc < 0) return -1;
    }
    return 0;
}

static int s_backup_page(redisContext *c, redisReply *keys, void *ctx, char *err, size_t errlen)
{
    backup_run_t *b = ctx;
    redisReply *chunk[CHUNK];
    size_t n = 0;
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING || s_matches(s_transient, k->str) ||
            (b->no_records && s_matches(s_records, k->str)))
            continue;
        chunk[n++] = k;
        if (n == CHUNK) {
            if (s_backup_chunk(c, chunk, n, b, err, errlen) < 0) return -1;
            n = 0;
        }
    }
    return n ? s_backup_chunk(c, chunk, n, b, err, errlen) : 0;
}

/* INFO server's redis_version, for the header (a DUMP payload restores into the same or a
 * newer Redis only). */
static void s_redis_version(redisContext *c, char *out, size_t cap)
{
    redisReply *r = redisCommand(c, "INFO server");
    const char *v = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    snprintf(out, cap, "%.*s", v ? (int)strcspn(v + 14, "\r\n") : 7, v ? v + 14 : "unknown");
    if (r) freeReplyObject(r);
}

static char *s_header(redisContext *c, const backup_args_t *a)
{
    char version[64], source[PATH_MAX + 64], err[256];
    redis_url_t u;
    s_redis_version(c, version, sizeof version);
    if (redis_url_parse(a->redis, &u, err, sizeof err) == 0)
        redis_url_describe(&u, source, sizeof source);
    else
        snprintf(source, sizeof source, "?");
    json_t *h = json_pack("{s:i, s:I, s:s, s:s, s:s, s:b}", "format", BACKUP_FORMAT, "created_ms",
                          (json_int_t)clock_wall_ms(), "redis_version", version, "source", source,
                          "match", "sp:*", "records", !a->no_records);
    char *text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    return text;
}

static int s_backup(redisContext *c, const backup_args_t *a, const char *path)
{
    char err[PATH_MAX + 256];
    char *header = s_header(c, a);
    backup_run_t b = {.no_records = a->no_records};
    b.w = header ? backup_writer_open(path, header, err, sizeof err) : NULL;
    free(header);
    if (!b.w) {
        fprintf(stderr, "snakepit backup: %s\n", header ? err : "out of memory");
        return 1;
    }
    if (farm_scan(c, "sp:*", s_backup_page, &b, err, sizeof err) < 0) {
        backup_writer_abort(&b.w);
        fprintf(stderr, "snakepit backup: %s\n", err);
        return 1;
    }
    uint64_t n = backup_writer_count(b.w);
    if (backup_writer_close(&b.w, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit backup: %s\n", err);
        return 1;
    }
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "snakepit backup: %s:", path);
    s_print_counts(what, n, b.counts);
    return 0;
}

/* ---- restore ------------------------------------------------------------------------------- */

typedef struct {
    long counts[CATS];
    long added, replaced, merged, expired, failed;
    char first_error[512];
} restore_run_t;

/* The commands that put one record back, inside MULTI … EXEC with EXISTS first (was it
 * there). Sets and sorted sets are merged through a temporary key. */
static void s_append_restore(redisContext *c, const backup_record_t *r, const char *tmp)
{
    char at[32];
    snprintf(at, sizeof at, "%lld", (long long)r->expire_at_ms);
    redisAppendCommand(c, "MULTI");
    redisAppendCommand(c, "EXISTS %b", r->key, r->key_len);
    if (r->type == BACKUP_SET || r->type == BACKUP_ZSET) {
        redisAppendCommand(c, "RESTORE %s 0 %b REPLACE", tmp, r->payload, r->payload_len);
        if (r->type == BACKUP_SET)
            redisAppendCommand(c, "SUNIONSTORE %b %b %s", r->key, r->key_len, r->key, r->key_len,
                               tmp);
        else
            redisAppendCommand(c, "ZUNIONSTORE %b 2 %b %s AGGREGATE MAX", r->key, r->key_len,
                               r->key, r->key_len, tmp);
        redisAppendCommand(c, "DEL %s", tmp);
        if (r->expire_at_ms) redisAppendCommand(c, "PEXPIREAT %b %s", r->key, r->key_len, at);
    } else if (r->expire_at_ms) { /* the same instant it would have expired at */
        redisAppendCommand(c, "RESTORE %b %s %b REPLACE ABSTTL", r->key, r->key_len, at, r->payload,
                           r->payload_len);
    } else {
        redisAppendCommand(c, "RESTORE %b 0 %b REPLACE", r->key, r->key_len, r->payload,
                           r->payload_len);
    }
    redisAppendCommand(c, "EXEC");
}

static int s_commands_of(const backup_record_t *r)
{
    if (r->type == BACKUP_SET || r->type == BACKUP_ZSET) return r->expire_at_ms ? 5 : 4;
    return 2;
}

static void s_note_error(restore_run_t *run, const char *key, const char *error, int *failed)
{
    if (!*failed && !run->first_error[0])
        snprintf(run->first_error, sizeof run->first_error, "%s: %s", key, error);
    *failed = 1;
}

/* Reads MULTI's, the queued commands' and EXEC's replies for one record; counts the outcome. */
static int s_read_restore(redisContext *c, int queued, const char *key, int merge,
                          restore_run_t *run)
{
    redisReply *r = NULL;
    int failed = 0;
    for (int i = 0; i < queued + 2; i++) { /* MULTI, the queued ones, EXEC */
        if (r) freeReplyObject(r);
        r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) return -1;
        if (r->type == REDIS_REPLY_ERROR) s_note_error(run, key, r->str, &failed);
    }
    /* EXEC's array: EXISTS first, then each command's own reply (an error among them) */
    int array = r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    int existed = array && r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer;
    for (size_t i = 0; array && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            s_note_error(run, key, r->element[i]->str, &failed);
    if (failed || !array)
        run->failed++;
    else if (!existed)
        run->added++;
    else if (merge)
        run->merged++;
    else
        run->replaced++;
    freeReplyObject(r);
    return 0;
}

/* Restores the file's records in chunks: commands for CHUNK records, then their replies. */
static int s_restore_all(redisContext *c, backup_reader_t *rd, restore_run_t *run, char *err,
                         size_t errlen)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "sp:restore:tmp:%d", (int)getpid());
    char *keys[CHUNK];
    int queued[CHUNK], merge[CHUNK];
    for (;;) {
        size_t n = 0;
        int more = 1;
        backup_record_t r;
        while (n < CHUNK && (more = backup_reader_next(rd, &r, err, errlen)) == 1) {
            if (r.expire_at_ms && r.expire_at_ms <= (int64_t)clock_wall_ms()) {
                run->expired++;
                continue;
            }
            s_append_restore(c, &r, tmp);
            keys[n] = xstrdup(r.key);
            queued[n] = s_commands_of(&r);
            merge[n] = r.type == BACKUP_SET || r.type == BACKUP_ZSET;
            run->counts[s_category(r.key)]++;
            n++;
        }
        int rc = more < 0 ? -1 : 0;
        for (size_t i = 0; i < n; i++) {
            if (rc == 0 && s_read_restore(c, queued[i], keys[i], merge[i], run) < 0) {
                snprintf(err, errlen, "redis: %s", c->errstr);
                rc = -1;
            }
            free(keys[i]);
        }
        if (rc < 0 || more == 0) return rc;
    }
}

/* The file checked whole before anything is written: its count, its checksum. */
static int s_verify(const char *path, char *header, size_t cap, char *err, size_t errlen)
{
    backup_reader_t *rd = backup_reader_open(path, header, cap, err, errlen);
    if (!rd) return -1;
    backup_record_t r;
    int rc;
    while ((rc = backup_reader_next(rd, &r, err, errlen)) == 1) {
    }
    backup_reader_close(&rd);
    if (rc < 0) return -1;
    json_t *h = json_loads(header, 0, NULL);
    int format = (int)json_integer_value(json_object_get(h, "format"));
    json_decref(h);
    if (format != BACKUP_FORMAT) {
        snprintf(err, errlen, "%s: backup format %d, this snakepit reads %d", path, format,
                 BACKUP_FORMAT);
        return -1;
    }
    return 0;
}

static int s_restore(redisContext *c, const char *path)
{
    char err[PATH_MAX + 256], header[BACKUP_MAX_HEADER + 1];
    if (s_verify(path, header, sizeof header, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit restore: %s; nothing was restored\n", err);
        return 1;
    }
    backup_reader_t *rd = backup_reader_open(path, header, sizeof header, err, sizeof err);
    restore_run_t run = {{0}};
    int rc = rd ? s_restore_all(c, rd, &run, err, sizeof err) : -1;
    backup_reader_close(&rd);
    if (rc < 0) {
        fprintf(stderr, "snakepit restore: %s\n", err);
        return 1;
    }
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "snakepit restore: from %s:", path);
    s_print_counts(what, (uint64_t)(run.added + run.replaced + run.merged + run.failed),
                   run.counts);
    fprintf(stderr,
            "snakepit restore: %ld new, %ld replaced, %ld merged (sets), %ld expired since "
            "the backup and skipped\n",
            run.added, run.replaced, run.merged, run.expired);
    if (farm_replicated(c, err, sizeof err) < 0) fprintf(stderr, "snakepit restore: %s\n", err);
    if (!run.failed) return 0;
    json_t *h = json_loads(header, 0, NULL);
    const char *version = json_string_value(json_object_get(h, "redis_version"));
    fprintf(stderr,
            "snakepit restore: %ld keys failed, the first: %s (the backup is from Redis %s: "
            "restore into the same or a newer one)\n",
            run.failed, run.first_error, version ? version : "?");
    json_decref(h);
    return 1;
}

/* ---- the commands -------------------------------------------------------------------------- */

static int s_main(int argc, char **argv, int restore)
{
    const char *name = restore ? "snakepit restore" : "snakepit backup";
    backup_args_t a = {0}, defaults = {0};
    char err[512], *rest[2];
    int n_rest = 2;
    const cfg_opt_t *opts = restore ? s_restore_opts : s_backup_opts;
    switch (config_load(&a, opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        if (restore)
            config_usage(
                stdout, "snakepit restore FILE [--state-dir DIR | --redis URL]",
                "Put a `snakepit backup` file back into a farm's Redis (the farm may run).\n"
                "The file is checked whole first. A key the farm has is replaced by the\n"
                "backup's; sets and sorted sets (the indexes) get its members added.\n"
                "Keys whose TTL ran out since the backup are skipped.",
                opts, &defaults);
        else
            config_usage(stdout,
                         "snakepit backup FILE [--no-records] [--state-dir DIR | --redis URL]",
                         "Copy a farm's tenants, quotas, API keys, usage, sessions, snapshots and\n"
                         "execution records from its Redis into FILE (mode 0600), while it runs:\n"
                         "each key exactly (Redis DUMP) with its TTL. Metrics snapshots and\n"
                         "rate-limit state are left out (rebuilt within seconds).",
                         opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "%s: %s\n", name, err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    if (n_rest != 1) {
        fprintf(stderr, "%s: %s (see --help)\n", name,
                n_rest ? "one FILE, nothing else" : "which FILE?");
        return EX_USAGE;
    }
    redisContext *c = farm_connect(name, a.state_dir, a.redis, sizeof a.redis);
    if (!c) return EX_UNAVAILABLE;
    int rc = restore ? s_restore(c, rest[0]) : s_backup(c, &a, rest[0]);
    redisFree(c);
    return rc;
}

int backup_main(int argc, char **argv)
{
    return s_main(argc, argv, 0);
}

int restore_main(int argc, char **argv)
{
    return s_main(argc, argv, 1);
}
