/* proto/result_egress.c — see result_egress.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_egress.h"

void result_egress_clear(result_egress_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->list[i].host);
        free(l->list[i].verdict);
        free(l->list[i].reason);
    }
    free(l->list);
    l->list = NULL;
    l->n = 0;
}

void result_egress_write(mpw_t *w, const result_egress_list_t *l)
{
    mpw_array(w, (uint32_t)l->n);
    for (size_t i = 0; i < l->n; i++) {
        const result_egress_t *e = &l->list[i];
        mpw_map(w, 7);
        mpw_kv_str(w, "host", e->host ? e->host : "");
        mpw_kv_uint(w, "port", e->port);
        mpw_kv_str(w, "verdict", e->verdict ? e->verdict : "refused");
        mpw_kv_str(w, "reason", e->reason);
        mpw_kv_uint(w, "connections", e->connections);
        mpw_kv_uint(w, "bytes_out", e->bytes_out);
        mpw_kv_uint(w, "bytes_in", e->bytes_in);
    }
}

static void s_read_one(mpr_t *r, result_egress_t *e)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t kl;
        uint64_t u;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "host") && !e->host) {
            mpr_strdup(r, RESULT_MAX_EGRESS_HOST, &e->host);
        } else if (mpr_key_is(k, kl, "port")) {
            if (mpr_uint(r, &u) == 0) {
                if (u > 65535) mpr_fail(r, "egress port out of range");
                e->port = (uint32_t)u;
            }
        } else if (mpr_key_is(k, kl, "verdict") && !e->verdict) {
            mpr_strdup(r, 16, &e->verdict);
        } else if (mpr_key_is(k, kl, "reason") && !e->reason) {
            if (!mpr_nil(r)) mpr_strdup(r, RESULT_MAX_EGRESS_WHY, &e->reason);
        } else if (mpr_key_is(k, kl, "connections")) {
            mpr_uint(r, &e->connections);
        } else if (mpr_key_is(k, kl, "bytes_out")) {
            mpr_uint(r, &e->bytes_out);
        } else if (mpr_key_is(k, kl, "bytes_in")) {
            mpr_uint(r, &e->bytes_in);
        } else {
            mpr_skip(r);
        }
    }
    if (!r->err && (!e->host || !e->verdict)) mpr_fail(r, "egress entry without host or verdict");
}

int result_egress_read(mpr_t *r, result_egress_list_t *l)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return -1;
    if (n > RESULT_MAX_EGRESS) return mpr_fail(r, "too many egress destinations");
    l->list = calloc(n ? n : 1, sizeof *l->list);
    if (!l->list) return mpr_fail(r, "out of memory");
    for (uint32_t i = 0; i < n && !r->err; i++) s_read_one(r, &l->list[l->n++]);
    return r->err ? -1 : 0;
}

/* The refused destinations of l as security_events entries (operation "connect", target
 * "host:port", layer "egress"), at most room of them. */
static uint32_t s_refusals(const result_egress_list_t *l, mpw_t *w, uint32_t room)
{
    uint32_t n = 0;
    for (size_t i = 0; i < l->n && n < room; i++) {
        const result_egress_t *e = &l->list[i];
        if (!e->verdict || strcmp(e->verdict, "refused") != 0) continue;
        n++;
        if (!w) continue;
        char target[RESULT_MAX_EGRESS_HOST + 16];
        snprintf(target, sizeof target, "%s:%u", e->host ? e->host : "", (unsigned)e->port);
        mpw_map(w, 4);
        mpw_kv_str(w, "operation", "connect");
        mpw_kv_str(w, "target", target);
        mpw_kv_str(w, "layer", "egress");
        mpw_kv_uint(w, "count", e->connections > UINT32_MAX ? UINT32_MAX : e->connections);
    }
    return n;
}

int result_egress_add(const uint8_t *body, size_t len, const result_egress_list_t *l, buf_t *out)
{
    mpr_t r;
    uint32_t n;
    mpr_init(&r, body, len);
    if (mpr_map(&r, &n) < 0 || n >= UINT32_MAX - 1) return -1;
    size_t mark = out->len;
    mpw_t w;
    mpw_init(&w, out);
    uint32_t refused = s_refusals(l, NULL, RESULT_EGRESS_MAX_EVENTS);
    if (!refused) { /* the common case: the zygote's map as it is, after the node's key */
        mpw_map(&w, n + 1);
        mpw_str(&w, "egress");
        result_egress_write(&w, l);
        buf_append(out, r.p, (size_t)(r.end - r.p));
        return 0;
    }
    /* refusals join the zygote's security_events (kept first), within RESULT_EGRESS_MAX_EVENTS */
    const uint8_t *events = NULL; /* the zygote's entries, raw, and how many */
    size_t events_len = 0;
    uint32_t n_events = 0;
    buf_t rest = {0}; /* every other key and value, raw */
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const uint8_t *k0 = r.p;
        const char *k;
        uint32_t kl;
        if (mpr_str(&r, &k, &kl) < 0) break;
        if (mpr_key_is(k, kl, "security_events") && !events) {
            if (mpr_array(&r, &n_events) < 0) break;
            events = r.p;
            for (uint32_t j = 0; j < n_events && !r.err; j++) mpr_skip(&r);
            events_len = (size_t)(r.p - events);
            continue;
        }
        mpr_skip(&r);
        buf_append(&rest, k0, (size_t)(r.p - k0));
    }
    if (mpr_done(&r) < 0) {
        if (rest.data) memset(rest.data, 0, rest.len);
        buf_free(&rest);
        out->len = mark;
        return -1;
    }
    if (n_events > RESULT_EGRESS_MAX_EVENTS) n_events = RESULT_EGRESS_MAX_EVENTS; /* the decoder's bound */
    uint32_t room = RESULT_EGRESS_MAX_EVENTS - n_events;
    uint32_t others = n - (events ? 1 : 0);
    mpw_map(&w, others + 2);
    mpw_str(&w, "egress");
    result_egress_write(&w, l);
    mpw_str(&w, "security_events");
    uint32_t added = s_refusals(l, NULL, room);
    mpw_array(&w, n_events + added);
    if (events) { /* the first n_events entries as they were */
        mpr_t e;
        mpr_init(&e, events, events_len);
        for (uint32_t j = 0; j < n_events; j++) mpr_skip(&e);
        buf_append(out, events, (size_t)(e.p - events));
    }
    s_refusals(l, &w, room);
    if (rest.len) buf_append(out, rest.data, rest.len);
    if (rest.data) memset(rest.data, 0, rest.len); /* a Result's output: as the caller's */
    buf_free(&rest);
    return 0;
}
