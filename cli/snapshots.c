/* cli/snapshots.c — see snapshots.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "cli/farm/farm.h"
#include "snapshots.h"

static json_t *s_value(const char *text)
{
    char *end;
    double d = strtod(text, &end);
    if (*text && !*end && end != text) {
        long long i = strtoll(text, &end, 10);
        return !*end ? json_integer(i) : json_real(d);
    }
    if (text[0] == '{' || text[0] == '[') {
        json_t *o = json_loads(text, 0, NULL);
        if (o) return o;
    }
    return json_string(text);
}

/* "sp:metrics:broker:vm-1" -> component "broker", instance "vm-1" (instances may hold ':'). */
static int s_split_key(const char *key, snapshot_t *s)
{
    const char *rest = key + strlen("sp:metrics:");
    const char *colon = strchr(rest, ':');
    if (!colon || colon == rest || (size_t)(colon - rest) >= sizeof s->component) return -1;
    snprintf(s->component, sizeof s->component, "%.*s", (int)(colon - rest), rest);
    snprintf(s->instance, sizeof s->instance, "%s", colon + 1);
    return 0;
}

static int s_cmp(const void *a, const void *b)
{
    const snapshot_t *x = a, *y = b;
    int c = strcmp(x->component, y->component);
    return c ? c : strcmp(x->instance, y->instance);
}

/* Loads every key of one SCAN page: HGETALL and PTTL pipelined. */
static int s_load_page(redisContext *c, redisReply *keys, void *ctx, char *err, size_t errlen)
{
    snapshots_t *all = ctx;
    size_t first = all->n;
    for (size_t i = 0; i < keys->elements && all->n < SNAPSHOTS_MAX; i++) {
        snapshot_t s = {0};
        if (keys->element[i]->type != REDIS_REPLY_STRING ||
            s_split_key(keys->element[i]->str, &s) < 0)
            continue;
        redisAppendCommand(c, "HGETALL %s", keys->element[i]->str);
        redisAppendCommand(c, "PTTL %s", keys->element[i]->str);
        all->v[all->n++] = s;
    }
    for (size_t k = first; k < all->n; k++) {
        snapshot_t *s = &all->v[k];
        redisReply *h = NULL, *t = NULL;
        if (redisGetReply(c, (void **)&h) != REDIS_OK ||
            redisGetReply(c, (void **)&t) != REDIS_OK) {
            snprintf(err, errlen, "redis: %s", c->errstr);
            if (h) freeReplyObject(h);
            all->n = k; /* the rest have no fields object yet */
            return -1;
        }
        s->fields = json_object();
        if (h->type == REDIS_REPLY_ARRAY)
            for (size_t j = 0; j + 1 < h->elements; j += 2)
                if (h->element[j]->type == REDIS_REPLY_STRING &&
                    h->element[j + 1]->type == REDIS_REPLY_STRING)
                    json_object_set_new(s->fields, h->element[j]->str,
                                        s_value(h->element[j + 1]->str));
        s->ttl_ms = t->type == REDIS_REPLY_INTEGER ? t->integer : -2;
        /* the broker writes ts_ms, the executor updated_ms: accept either */
        s->ts_ms = snapshot_num(s->fields, "ts_ms", snapshot_num(s->fields, "updated_ms", 0));
        freeReplyObject(h);
        freeReplyObject(t);
    }
    return all->n >= SNAPSHOTS_MAX; /* full: stop scanning */
}

int snapshots_read(redisContext *c, snapshots_t *all, char *err, size_t errlen)
{
    all->v = calloc(SNAPSHOTS_MAX, sizeof *all->v);
    all->n = 0;
    if (!all->v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (farm_scan(c, "sp:metrics:*", s_load_page, all, err, errlen) < 0) return -1;
    qsort(all->v, all->n, sizeof *all->v, s_cmp);
    return 0;
}

/* Waits for the interval, then up to a second more for each process's next snapshot. */
int snapshots_read_again(redisContext *c, const snapshots_t *first, snapshots_t *now,
                         long interval_ms, char *err, size_t errlen)
{
    usleep((useconds_t)interval_ms * 1000);
    for (int tries = 0;; tries++) {
        if (snapshots_read(c, now, err, errlen) < 0) return -1;
        size_t unchanged = 0;
        for (size_t i = 0; i < now->n; i++) {
            const snapshot_t *b = snapshots_find(first, &now->v[i]);
            unchanged += b && b->ts_ms && b->ts_ms == now->v[i].ts_ms &&
                         !snapshot_stale(&now->v[i], (long long)clock_wall_ms());
        }
        if (!unchanged || tries == 10) return 0;
        snapshots_free(now);
        usleep(100 * 1000);
    }
}

void snapshots_free(snapshots_t *all)
{
    for (size_t i = 0; i < all->n; i++) json_decref(all->v[i].fields);
    free(all->v);
    all->v = NULL;
    all->n = 0;
}

const snapshot_t *snapshots_find(const snapshots_t *all, const snapshot_t *s)
{
    for (size_t i = 0; i < all->n; i++)
        if (!strcmp(all->v[i].component, s->component) && !strcmp(all->v[i].instance, s->instance))
            return &all->v[i];
    return NULL;
}

long long snapshot_num(const json_t *fields, const char *name, long long dflt)
{
    const json_t *v = json_object_get(fields, name);
    return json_is_number(v) ? (long long)json_number_value(v) : dflt;
}

int snapshot_stale(const snapshot_t *s, long long now_ms)
{
    return !s->ts_ms || now_ms - s->ts_ms > SNAPSHOT_STALE_MS;
}

/* Counters are the fields named *_total plus the executor's plain counts. */
static int s_is_counter(const char *name)
{
    static const char *plain[] = {"jobs", "violations", "forks", "zygote_restarts", NULL};
    size_t n = strlen(name);
    if (n > 6 && !strcmp(name + n - 6, "_total")) return 1;
    for (int i = 0; plain[i]; i++)
        if (!strcmp(name, plain[i])) return 1;
    return 0;
}

/* Rates per second of each counter between two readings of the same process; NULL when
 * the snapshot did not change (or the process restarted: counters went down). */
json_t *snapshot_rates(const snapshot_t *now, const snapshot_t *before)
{
    if (!before || now->ts_ms <= before->ts_ms || !before->ts_ms) return NULL;
    double dt = (double)(now->ts_ms - before->ts_ms) / 1000.0;
    json_t *rates = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(now->fields, name, v)
    {
        const json_t *old = json_object_get(before->fields, name);
        if (!s_is_counter(name) || !json_is_number(v) || !json_is_number(old)) continue;
        double d = json_number_value(v) - json_number_value(old);
        if (d < 0) {
            json_decref(rates);
            return NULL;
        }
        json_object_set_new(rates, name, json_real(d / dt));
    }
    return rates;
}
