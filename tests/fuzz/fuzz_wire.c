/* tests/fuzz/fuzz_wire.c — libFuzzer target for the broker's frame decoding
 * (proto/wire.c: wire_parse_client, wire_parse_worker, and the route and READY bodies they
 * decode). The input is a channel byte, then frames as [u16 little-endian length][bytes],
 * at most 8 (the broker drops longer messages before parsing). Beyond "no crash, no
 * sanitizer report", it checks what the broker relies on after a successful parse: names in
 * the allowed alphabet, a 16-byte job id inside the input, bodies under the cap, and route
 * and READY bodies that survive an encode/decode round trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../proto/wire.h"

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
    buf_free(&b);
}

static void s_ready_roundtrip(const ready_t *r)
{
    buf_t b;
    buf_init(&b);
    ready_encode(r, &b, NULL, 0);
    ready_t back;
    char err[128];
    s_check(ready_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(strcmp(back.node, r->node) == 0 && back.n_services == r->n_services &&
            back.slots == r->slots);
    for (int i = 0; i < r->n_services; i++) s_check(strcmp(back.services[i], r->services[i]) == 0);
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
