/* tests/fuzz/fuzz_result.c — libFuzzer target for Result decoding (proto/result.c
 * result_decode: the front-end and the CLI decode what executors, which run hostile code,
 * send back). A Result that decodes must respect the caps and round-trip unchanged, its
 * security_events included; with the node's egress destinations added (proto/result_egress.c,
 * which rewrites a zygote's Result) it still decodes, its own events first, its output as it
 * was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/result.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static int s_same(const char *a, const char *b)
{
    return (!a) == (!b) && (!a || strcmp(a, b) == 0);
}

/* security_events survive the round trip whole: each entry's words and count. */
static int s_same_events(const result_t *a, const result_t *b)
{
    if (a->n_events != b->n_events || a->events_truncated != b->events_truncated) return 0;
    for (size_t i = 0; i < a->n_events; i++)
        if (!s_same(a->events[i].operation, b->events[i].operation) ||
            !s_same(a->events[i].target, b->events[i].target) ||
            !s_same(a->events[i].layer, b->events[i].layer) ||
            a->events[i].count != b->events[i].count)
            return 0;
    return 1;
}

static void s_egress_added(const uint8_t *data, size_t size, const result_t *res)
{
    result_egress_t dests[2] = {{"127.0.0.1", 80, "allowed", NULL, 1, 10, 20},
                                {"169.254.169.254", 80, "refused", "link-local", 3, 0, 0}};
    result_egress_list_t l = {dests, 2};
    buf_t b;
    buf_init(&b);
    result_t back;
    char err[256];
    if (result_egress_add(data, size, &l, &b) == 0) {
        s_check(result_decode(b.data, b.len, &back, err, sizeof err) == 0);
        size_t want = res->n_events < RESULT_MAX_EVENTS ? res->n_events + 1 : RESULT_MAX_EVENTS;
        s_check(back.n_events == want && back.egress.n == 2 && back.status == res->status &&
                back.out_len == res->out_len &&
                (res->out_len == 0 || memcmp(back.out, res->out, res->out_len) == 0));
        for (size_t i = 0; i < res->n_events; i++)
            s_check(s_same(back.events[i].target, res->events[i].target) &&
                    back.events[i].count == res->events[i].count);
        if (res->n_events < RESULT_MAX_EVENTS)
            s_check(!strcmp(back.events[res->n_events].layer, "egress") &&
                    back.events[res->n_events].count == 3);
        result_clear(&back);
    }
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    result_t res, back;
    char     err[256];
    if (result_decode(data, size, &res, err, sizeof err) < 0) {
        s_check(err[0] != '\0');
        return 0;
    }
    s_check((unsigned)res.status < ST__COUNT);
    s_check(res.out_len <= RESULT_MAX_STREAM && res.err_len <= RESULT_MAX_STREAM);
    s_check(res.n_images <= RESULT_MAX_IMAGES && res.n_files <= RESULT_MAX_FILES &&
            res.n_events <= RESULT_MAX_EVENTS);
    for (size_t i = 0; i < res.n_events; i++)
        s_check(res.events[i].operation && res.events[i].layer);
    buf_t b;
    buf_init(&b);
    result_encode(&res, &b);
    s_check(result_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(back.status == res.status && back.out_len == res.out_len &&
            (res.out_len == 0 || memcmp(back.out, res.out, res.out_len) == 0) &&
            back.err_len == res.err_len && back.error.present == res.error.present &&
            back.n_images == res.n_images && back.max_rss_kb == res.max_rss_kb &&
            (!res.result) == (!back.result) &&
            (!res.result || strcmp(res.result, back.result) == 0) &&
            back.exit.code == res.exit.code && s_same_events(&res, &back));
    result_clear(&back);
    s_egress_added(data, size, &res);
    result_clear(&res);
    buf_free(&b);
    return 0;
}
