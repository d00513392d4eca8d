/* tests/fuzz/fuzz_wire.c — libFuzzer target for the broker's frame decoding
 * (proto/wire.c: wire_parse_client, wire_parse_worker, and the route and READY bodies they
 * decode, sessions included: READY's list and SESSIONS; and LEAVING, the drain). The
 * input is a channel byte, then frames as [u16 little-endian length][bytes], at most 8 (the broker
 * drops longer messages before parsing). Beyond "no crash, no sanitizer report", it checks what the
 * broker relies on after a successful parse: names in the allowed alphabet, a 16-byte job id inside
 * the input, bodies under the cap, and route and READY bodies that survive an encode/decode round
 * trip unchanged. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/wire.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static int s_inside(const uint8_t *p, size_t len, const uint8_t *data, size_t size)
{
    return p >= data && p + len <= data + size;
}

static void s_route_roundtrip(const route_t *r)
{
    buf_t b;
    buf_init(&b);
    route_encode(r, &b);
    route_t back;
    char err[128];
    s_check(route_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(strcmp(back.tenant, r->tenant) == 0 && back.deadline_ms == r->deadline_ms &&
            back.max_inflight == r->max_inflight && back.attempt == r->attempt);
    s_check(back.has_session == r->has_session && back.has_new_session == r->has_new_session);
    s_check(!r->has_session || memcmp(back.session, r->session, ID_BYTES) == 0);
    s_check(!r->has_new_session || memcmp(back.new_session, r->new_session, ID_BYTES) == 0);
    buf_free(&b);
}

/* The ids of a checked list, copied out (caller frees). */
static uint8_t (*s_ids(const wire_ids_t *ids))[ID_BYTES]
{
    uint8_t(*out)[ID_BYTES] = calloc(ids->n + 1, ID_BYTES);
    for (uint32_t i = 0; i < ids->n; i++) wire_ids_at(ids, i, out[i]);
    return out;
}

static int s_same_ids(const wire_ids_t *a, const wire_ids_t *b)
{
    uint8_t x[ID_BYTES], y[ID_BYTES];
    if (a->n != b->n) return 0;
    for (uint32_t i = 0; i < a->n; i++) {
        wire_ids_at(a, i, x);
        wire_ids_at(b, i, y);
        if (memcmp(x, y, ID_BYTES) != 0) return 0;
    }
    return 1;
}

static void s_ready_roundtrip(const ready_t *r)
{
    buf_t b;
    buf_init(&b);
    uint8_t(*ids)[ID_BYTES] = s_ids(&r->sessions);
    ready_encode(r, &b, (const uint8_t(*)[ID_BYTES])ids, r->sessions.n);
    ready_t back;
    char err[128];
    s_check(ready_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(strcmp(back.node, r->node) == 0 && back.n_services == r->n_services &&
            back.slots == r->slots && back.reserve == r->reserve && back.mem_free_mb == r->mem_free_mb &&
            back.max_sessions == r->max_sessions && s_same_ids(&back.sessions, &r->sessions));
    for (int i = 0; i < r->n_services; i++) s_check(strcmp(back.services[i], r->services[i]) == 0);
    free(ids);
    buf_free(&b);
}

typedef struct {
    uint8_t (*ids)[ID_BYTES];
    char **reasons;
    size_t n;
} downs_t;

static void s_down(void *arg, const uint8_t id[ID_BYTES], const char *reason, size_t len)
{
    downs_t *d = arg;
    s_check(len <= WIRE_MAX_REASON);
    memcpy(d->ids[d->n], id, ID_BYTES);
    d->reasons[d->n] = strndup(reason, len);
    s_check(d->reasons[d->n] && strlen(d->reasons[d->n]) == len); /* no NUL inside */
    d->n++;
}

/* SESSIONS re-encoded from what was read decodes to the same thing. */
static void s_sessions_roundtrip(const sessions_msg_t *m)
{
    s_check(m->up.n <= WIRE_MAX_SESSION_CHANGES && m->n_down <= WIRE_MAX_SESSION_CHANGES);
    downs_t d = {calloc(m->n_down + 1, ID_BYTES), calloc(m->n_down + 1, sizeof(char *)), 0};
    wire_down_each(m, s_down, &d);
    s_check(d.n == m->n_down);
    uint8_t(*up)[ID_BYTES] = s_ids(&m->up);
    buf_t b;
    buf_init(&b);
    sessions_encode(m->mem_free_mb, m->sessions, (const uint8_t(*)[ID_BYTES])up, m->up.n,
                    (const uint8_t(*)[ID_BYTES])d.ids, (const char *const *)d.reasons, d.n, &b);
    sessions_msg_t back;
    char err[128];
    s_check(sessions_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(back.mem_free_mb == m->mem_free_mb && back.sessions == m->sessions &&
            back.n_down == m->n_down && s_same_ids(&back.up, &m->up));
    downs_t again = {calloc(d.n + 1, ID_BYTES), calloc(d.n + 1, sizeof(char *)), 0};
    wire_down_each(&back, s_down, &again);
    for (size_t i = 0; i < d.n; i++) {
        s_check(memcmp(again.ids[i], d.ids[i], ID_BYTES) == 0);
        s_check(strcmp(again.reasons[i], d.reasons[i]) == 0);
        free(again.reasons[i]);
        free(d.reasons[i]);
    }
    free(again.ids), free(again.reasons), free(d.ids), free(d.reasons), free(up);
    buf_free(&b);
}

/* LEAVING re-encoded from what was read decodes to the same thing, within its caps. */
static void s_leaving_roundtrip(const leaving_t *m)
{
    s_check(m->grace_ms <= WIRE_MAX_DRAIN_GRACE_MS && m->running <= 4096);
    size_t len = strlen(m->reason);
    s_check(len <= WIRE_MAX_REASON);
    for (size_t i = 0; i < len; i++)
        s_check((unsigned char)m->reason[i] >= 0x20 && m->reason[i] != 0x7f);
    buf_t b;
    buf_init(&b);
    leaving_encode(m, &b);
    leaving_t back;
    char err[128];
    s_check(leaving_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(back.grace_ms == m->grace_ms && back.running == m->running &&
            strcmp(back.reason, m->reason) == 0);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int worker = data[0] & 1;
    frames_t fr = {.n = 0};
    size_t at = 1;
    while (at < size && fr.n < WIRE_MAX_FRAMES) {
        size_t len = at + 2 <= size ? (size_t)(data[at] | data[at + 1] << 8) : 0;
        at += 2;
        if (at > size) at = size;
        if (len > size - at) len = size - at;
        fr.f[fr.n++] = (frame_t){data + at, len};
        at += len;
    }
    char err[128];
    if (!worker) {
        client_msg_t m;
        if (wire_parse_client(&fr, &m, err, sizeof err) == 0) {
            s_check(m.cmd == fr.f[1].data[0]);
            if (m.cmd != CMD_PING && m.cmd != CMD_PONG) {
                s_check(wire_name_ok(m.service, strlen(m.service)));
                s_check(m.job_id && s_inside(m.job_id, ID_BYTES, data, size));
            }
            s_check(m.body.len <= WIRE_MAX_BODY);
            if (m.cmd == CMD_SUBMIT) {
                s_check(wire_name_ok(m.route.tenant, strlen(m.route.tenant)));
                s_route_roundtrip(&m.route);
            }
        } else {
            s_check(err[0] != '\0'); /* every refusal names its reason, for the log */
        }
    } else {
        worker_msg_t m;
        if (wire_parse_worker(&fr, &m, err, sizeof err) == 0) {
            s_check(m.cmd == fr.f[1].data[0]);
            if (m.cmd == W_READY) {
                s_check(m.ready.n_services >= 1 && m.ready.n_services <= WIRE_MAX_SERVICES);
                s_check(m.ready.slots <= 4096);
                for (int i = 0; i < m.ready.n_services; i++)
                    s_check(wire_name_ok(m.ready.services[i], strlen(m.ready.services[i])));
                s_ready_roundtrip(&m.ready);
            }
            if (m.cmd == W_SESSIONS) s_sessions_roundtrip(&m.sessions);
            if (m.cmd == W_LEAVING) s_leaving_roundtrip(&m.leaving);
            if (m.cmd == W_CREDIT) s_check(m.credit <= 4096);
            if (m.cmd == W_RESULT || m.cmd == W_PROGRESS || m.cmd == W_CANCEL || m.cmd == W_JOB)
                s_check(m.job_id && s_inside(m.job_id, ID_BYTES, data, size));
            s_check(m.body.len <= WIRE_MAX_BODY);
        } else {
            s_check(err[0] != '\0');
        }
    }
    return 0;
}
