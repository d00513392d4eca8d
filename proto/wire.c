/* proto/wire.c — frame validation for both channels (PROTOCOL.md §2–3). Every rejection
 * names its reason so the caller can log and count it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "mpack.h"
#include "wire.h"

int wire_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > 64) return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int s_fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

static int s_service(const frame_t *f, char out[65])
{
    if (!wire_name_ok((const char *)f->data, f->len)) return -1;
    memcpy(out, f->data, f->len);
    out[f->len] = '\0';
    return 0;
}

static int s_head(const frames_t *fr, const char *tag, uint8_t *cmd, char *err, size_t errlen)
{
    if (fr->n < 2) return s_fail(err, errlen, "too few frames");
    if (fr->f[0].len != 4 || memcmp(fr->f[0].data, tag, 4) != 0)
        return s_fail(err, errlen, "unknown protocol tag");
    if (fr->f[1].len != 1) return s_fail(err, errlen, "command frame is not one byte");
    *cmd = fr->f[1].data[0];
    return 0;
}

int wire_parse_client(const frames_t *fr, client_msg_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (s_head(fr, WIRE_CLIENT_TAG, &out->cmd, err, errlen) < 0) return -1;
    int want;
    switch (out->cmd) {
    case CMD_PING:
    case CMD_PONG: want = 2; break;
    case CMD_CANCEL:
    case CMD_ACCEPTED: want = 4; break;
    case CMD_PROGRESS:
    case CMD_RESULT:
    case CMD_REJECT: want = 5; break;
    case CMD_SUBMIT: want = 6; break;
    default: return s_fail(err, errlen, "unknown client command");
    }
    if (fr->n != want) return s_fail(err, errlen, "wrong number of frames for command");
    if (want == 2) return 0;
    if (s_service(&fr->f[2], out->service) < 0) return s_fail(err, errlen, "bad service name");
    if (fr->f[3].len != ID_BYTES) return s_fail(err, errlen, "job id is not 16 bytes");
    out->job_id = fr->f[3].data;
    if (out->cmd == CMD_SUBMIT) {
        if (route_decode(fr->f[4].data, fr->f[4].len, &out->route, err, errlen) < 0) return -1;
        out->body = fr->f[5];
    } else if (want == 5) {
        out->body = fr->f[4];
    }
    if (out->body.len > WIRE_MAX_BODY) return s_fail(err, errlen, "body too large");
    return 0;
}

/* A frame holding one msgpack uint no larger than max. */
static int s_small_uint(const frame_t *f, uint64_t max, uint64_t *out)
{
    mpr_t r;
    mpr_init(&r, f->data, f->len);
    return mpr_uint(&r, out) < 0 || mpr_done(&r) < 0 || *out > max ? -1 : 0;
}

int wire_parse_worker(const frames_t *fr, worker_msg_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (s_head(fr, WIRE_WORKER_TAG, &out->cmd, err, errlen) < 0) return -1;
    int want;
    switch (out->cmd) {
    case W_HEARTBEAT:
    case W_DISCONNECT: want = 2; break;
    case W_READY:
    case W_CREDIT:
    case W_SESSIONS:
    case W_LEAVING:
    case W_WANT:
    case W_RECLAIM:
    case W_RELEASE:
    case W_CANCEL: want = 3; break;
    case W_RESULT:
    case W_ANSWER:
    case W_HELD:
    case W_PROGRESS: want = 4; break;
    case W_PROBE: want = 5; break;
    case W_JOB: want = 6; break;
    default: return s_fail(err, errlen, "unknown worker command");
    }
    if (fr->n != want) return s_fail(err, errlen, "wrong number of frames for command");
    switch (out->cmd) {
    case W_READY:
        return ready_decode(fr->f[2].data, fr->f[2].len, &out->ready, err, errlen);
    case W_SESSIONS:
        return sessions_decode(fr->f[2].data, fr->f[2].len, &out->sessions, err, errlen);
    case W_LEAVING:
        return leaving_decode(fr->f[2].data, fr->f[2].len, &out->leaving, err, errlen);
    case W_CREDIT:
    case W_WANT:
    case W_RECLAIM:
    case W_RELEASE:
        if (s_small_uint(&fr->f[2], 4096, &out->credit) < 0)
            return s_fail(err, errlen, "bad credit count");
        return 0;
    case W_HELD:
        if (fr->f[2].len != ID_BYTES) return s_fail(err, errlen, "job id is not 16 bytes");
        out->job_id = fr->f[2].data;
        if (s_small_uint(&fr->f[3], HELD_STATE_DONE, &out->credit) < 0)
            return s_fail(err, errlen, "bad held state");
        return 0;
    case W_CANCEL:
    case W_RESULT:
    case W_ANSWER:
    case W_PROGRESS:
        if (fr->f[2].len != ID_BYTES) return s_fail(err, errlen, "job id is not 16 bytes");
        out->job_id = fr->f[2].data;
        if (want == 4) out->body = fr->f[3];
        break;
    case W_PROBE:
        if (s_service(&fr->f[2], out->service) < 0) return s_fail(err, errlen, "bad service name");
        if (fr->f[3].len != ID_BYTES) return s_fail(err, errlen, "job id is not 16 bytes");
        out->job_id = fr->f[3].data;
        return route_decode(fr->f[4].data, fr->f[4].len, &out->route, err, errlen);
    case W_JOB:
        if (s_service(&fr->f[2], out->service) < 0) return s_fail(err, errlen, "bad service name");
        if (fr->f[3].len != ID_BYTES) return s_fail(err, errlen, "job id is not 16 bytes");
        out->job_id = fr->f[3].data;
        if (route_decode(fr->f[4].data, fr->f[4].len, &out->route, err, errlen) < 0) return -1;
        out->body = fr->f[5];
        break;
    }
    if (out->body.len > WIRE_MAX_BODY) return s_fail(err, errlen, "body too large");
    return 0;
}

void route_encode(const route_t *route, buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 4 + (uint32_t)(route->has_session + route->has_new_session) +
                    (route->resubmit ? 1 : 0));
    mpw_kv_str(&w, "tenant", route->tenant);
    mpw_kv_uint(&w, "deadline_ms", route->deadline_ms);
    mpw_kv_uint(&w, "max_inflight", route->max_inflight);
    mpw_kv_uint(&w, "attempt", route->attempt);
    if (route->resubmit) mpw_kv_uint(&w, "resubmit", 1);
    if (route->has_session) {
        mpw_str(&w, "session");
        mpw_bin(&w, route->session, ID_BYTES);
    }
    if (route->has_new_session) {
        mpw_str(&w, "new_session");
        mpw_bin(&w, route->new_session, ID_BYTES);
    }
}

static void s_read_id(mpr_t *r, uint8_t out[ID_BYTES], int *has)
{
    const uint8_t *b;
    uint32_t len;
    if (mpr_bytes(r, &b, &len) < 0) return;
    if (len != ID_BYTES) {
        mpr_fail(r, "session id is not 16 bytes");
        return;
    }
    memcpy(out, b, ID_BYTES);
    *has = 1;
}

/* An array of 16-byte bins, each packed as bin8 (0xc4 0x10, then the bytes), which is how
 * every msgpack packer writes 16 bytes of bin: checked here once, read in place later. */
#define ID_ITEM 18

static void s_read_ids(mpr_t *r, uint32_t max, wire_ids_t *ids)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > max) {
        mpr_fail(r, "too many session ids");
        return;
    }
    const uint8_t *start = r->p;
    if ((size_t)(r->end - r->p) < (size_t)n * ID_ITEM) {
        mpr_fail(r, "session id list cut short");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        if (start[i * ID_ITEM] != 0xc4 || start[i * ID_ITEM + 1] != ID_BYTES) {
            mpr_fail(r, "a session id is not a 16-byte bin");
            return;
        }
    r->p += (size_t)n * ID_ITEM;
    ids->raw = (frame_t){start, (size_t)n * ID_ITEM};
    ids->n = n;
}

static void s_write_ids(mpw_t *w, const uint8_t (*ids)[ID_BYTES], size_t n)
{
    mpw_array(w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) mpw_bin(w, ids[i], ID_BYTES);
}

void wire_ids_at(const wire_ids_t *ids, uint32_t i, uint8_t out[ID_BYTES])
{
    memcpy(out, ids->raw.data + (size_t)i * ID_ITEM + 2, ID_BYTES);
}

static int s_copy_name(mpr_t *r, char out[65])
{
    const char *s;
    uint32_t    len;
    if (mpr_str(r, &s, &len) < 0) return -1;
    if (!wire_name_ok(s, len)) return mpr_fail(r, "bad name");
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

int route_decode(const void *data, size_t len, route_t *route, char *err, size_t errlen)
{
    mpr_t    r;
    uint32_t n;
    uint64_t v;
    memset(route, 0, sizeof *route);
    mpr_init(&r, data, len);
    if (len > 1024) mpr_fail(&r, "route header too large");
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "tenant")) s_copy_name(&r, route->tenant);
            else if (mpr_key_is(k, kl, "deadline_ms")) mpr_uint(&r, &route->deadline_ms);
            else if (mpr_key_is(k, kl, "max_inflight")) {
                if (mpr_uint(&r, &v) == 0) route->max_inflight = v > 1u << 20 ? 1u << 20 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "attempt")) {
                if (mpr_uint(&r, &v) == 0) route->attempt = v > 100 ? 100 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "session")) {
                s_read_id(&r, route->session, &route->has_session);
            } else if (mpr_key_is(k, kl, "new_session")) {
                s_read_id(&r, route->new_session, &route->has_new_session);
            } else if (mpr_key_is(k, kl, "resubmit")) {
                if (mpr_uint(&r, &v) == 0) route->resubmit = v != 0;
            } else mpr_skip(&r);
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes in route header";
    if (!why && !route->tenant[0]) why = "route header without tenant";
    if (why) {
        snprintf(err, errlen, "route: %s", why);
        return -1;
    }
    return 0;
}

void ready_encode(const ready_t *ready, buf_t *out, const uint8_t (*ids)[ID_BYTES], size_t n)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 10);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "node", ready->node);
    mpw_str(&w, "services");
    mpw_array(&w, (uint32_t)ready->n_services);
    for (int i = 0; i < ready->n_services; i++) mpw_str(&w, ready->services[i]);
    mpw_kv_uint(&w, "slots", ready->slots);
    mpw_kv_uint(&w, "reserve", ready->reserve);
    mpw_kv_str(&w, "python", ready->python);
    mpw_kv_str(&w, "layers", ready->layers);
    mpw_kv_uint(&w, "mem_free_mb", ready->mem_free_mb);
    mpw_kv_uint(&w, "max_sessions", ready->max_sessions);
    mpw_str(&w, "sessions");
    s_write_ids(&w, ids, n);
}

static void s_copy_text(mpr_t *r, char *out, size_t cap)
{
    const char *s;
    uint32_t    len;
    if (mpr_str(r, &s, &len) < 0) return;
    if (len >= cap || memchr(s, '\0', len)) {
        mpr_fail(r, "text field too long");
        return;
    }
    memcpy(out, s, len);
    out[len] = '\0';
}

int ready_decode(const void *data, size_t len, ready_t *ready, char *err, size_t errlen)
{
    mpr_t    r;
    uint32_t n;
    uint64_t v, version = 0;
    memset(ready, 0, sizeof *ready);
    mpr_init(&r, data, len);
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v")) mpr_uint(&r, &version);
            else if (mpr_key_is(k, kl, "node")) s_copy_name(&r, ready->node);
            else if (mpr_key_is(k, kl, "services")) {
                uint32_t m;
                if (mpr_array(&r, &m) < 0) break;
                if (m > WIRE_MAX_SERVICES || ready->n_services) {
                    mpr_fail(&r, "too many services");
                    break;
                }
                for (uint32_t j = 0; j < m && !r.err; j++)
                    s_copy_name(&r, ready->services[ready->n_services++]);
            } else if (mpr_key_is(k, kl, "slots")) {
                if (mpr_uint(&r, &v) == 0) {
                    if (v > 4096) mpr_fail(&r, "too many slots");
                    ready->slots = (uint32_t)v;
                }
            } else if (mpr_key_is(k, kl, "reserve")) {
                if (mpr_uint(&r, &v) == 0) ready->reserve = v > 4096 ? 4096 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "python")) s_copy_text(&r, ready->python, sizeof ready->python);
            else if (mpr_key_is(k, kl, "layers")) s_copy_text(&r, ready->layers, sizeof ready->layers);
            else if (mpr_key_is(k, kl, "mem_free_mb")) {
                if (mpr_uint(&r, &v) == 0) ready->mem_free_mb = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "max_sessions")) {
                if (mpr_uint(&r, &v) == 0)
                    ready->max_sessions = v > WIRE_MAX_SESSIONS ? WIRE_MAX_SESSIONS : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "sessions") && !ready->sessions.n) {
                s_read_ids(&r, WIRE_MAX_SESSIONS, &ready->sessions);
            } else mpr_skip(&r);
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes in READY";
    if (!why && version != 1) why = "unsupported READY version";
    if (!why && (!ready->node[0] || ready->n_services == 0)) why = "READY without node or services";
    if (!why && ready->reserve > ready->slots) why = "READY reserves more slots than it has";
    if (why) {
        snprintf(err, errlen, "ready: %s", why);
        return -1;
    }
    return 0;
}

void sessions_encode(uint32_t mem_free_mb, uint32_t held, const uint8_t (*up)[ID_BYTES],
                     size_t n_up, const uint8_t (*down)[ID_BYTES], const char *const *reasons,
                     size_t n_down, buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 5);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_uint(&w, "mem_free_mb", mem_free_mb);
    mpw_kv_uint(&w, "sessions", held);
    mpw_str(&w, "up");
    s_write_ids(&w, up, n_up);
    mpw_str(&w, "down");
    mpw_array(&w, (uint32_t)n_down);
    for (size_t i = 0; i < n_down; i++) {
        char clean[WIRE_MAX_REASON];
        size_t len = strnlen(reasons[i], WIRE_MAX_REASON);
        for (size_t k = 0; k < len; k++) /* a reason may quote the tenant's text */
            clean[k] = (unsigned char)reasons[i][k] < 0x20 || reasons[i][k] == 0x7f ? ' ' : reasons[i][k];
        mpw_array(&w, 2);
        mpw_bin(&w, down[i], ID_BYTES);
        mpw_strn(&w, clean, len);
    }
}

/* The down list: [[bin16, str], ...], each checked; the raw span is kept for wire_down_each. */
static void s_read_down(mpr_t *r, sessions_msg_t *m)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > WIRE_MAX_SESSION_CHANGES) {
        mpr_fail(r, "too many ended sessions");
        return;
    }
    const uint8_t *start = r->p;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint32_t two, len;
        const uint8_t *id;
        const char *reason;
        if (mpr_array(r, &two) < 0) return;
        if (two != 2) {
            mpr_fail(r, "an ended session is not [id, reason]");
            return;
        }
        if (mpr_bytes(r, &id, &len) == 0 && len != ID_BYTES) mpr_fail(r, "bad session id");
        if (mpr_str(r, &reason, &len) == 0 && len > WIRE_MAX_REASON) mpr_fail(r, "reason too long");
        for (uint32_t k = 0; !r->err && k < len; k++) /* it is shown and logged as it is */
            if ((unsigned char)reason[k] < 0x20 || reason[k] == 0x7f)
                mpr_fail(r, "a control character in a reason");
    }
    m->down_raw = (frame_t){start, (size_t)(r->p - start)};
    m->n_down = n;
}

int sessions_decode(const void *data, size_t len, sessions_msg_t *m, char *err, size_t errlen)
{
    mpr_t r;
    uint32_t n;
    uint64_t v, version = 0;
    memset(m, 0, sizeof *m);
    mpr_init(&r, data, len);
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v")) mpr_uint(&r, &version);
            else if (mpr_key_is(k, kl, "mem_free_mb")) {
                if (mpr_uint(&r, &v) == 0) m->mem_free_mb = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "sessions")) {
                if (mpr_uint(&r, &v) == 0)
                    m->sessions = v > WIRE_MAX_SESSIONS ? WIRE_MAX_SESSIONS : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "up") && !m->up.n) {
                s_read_ids(&r, WIRE_MAX_SESSION_CHANGES, &m->up);
            } else if (mpr_key_is(k, kl, "down") && !m->n_down) {
                s_read_down(&r, m);
            } else mpr_skip(&r);
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes in SESSIONS";
    if (!why && version != 1) why = "unsupported SESSIONS version";
    if (why) {
        snprintf(err, errlen, "sessions: %s", why);
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}

void wire_down_each(const sessions_msg_t *m, wire_down_fn *fn, void *arg)
{
    mpr_t r;
    mpr_init(&r, m->down_raw.data, m->down_raw.len);
    for (uint32_t i = 0; i < m->n_down && !r.err; i++) {
        uint32_t two, len;
        const uint8_t *id;
        const char *reason;
        if (mpr_array(&r, &two) < 0 || mpr_bytes(&r, &id, &len) < 0 ||
            mpr_str(&r, &reason, &len) < 0)
            return; /* cannot happen: sessions_decode checked it */
        fn(arg, id, reason, len);
    }
}

void leaving_encode(const leaving_t *m, buf_t *out)
{
    char clean[WIRE_MAX_REASON];
    size_t len = strnlen(m->reason, WIRE_MAX_REASON);
    for (size_t k = 0; k < len; k++)
        clean[k] = (unsigned char)m->reason[k] < 0x20 || m->reason[k] == 0x7f ? ' ' : m->reason[k];
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 4);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_uint(&w, "grace_ms", m->grace_ms);
    mpw_kv_uint(&w, "running", m->running);
    mpw_str(&w, "reason");
    mpw_strn(&w, clean, len);
}

int leaving_decode(const void *data, size_t len, leaving_t *m, char *err, size_t errlen)
{
    mpr_t r;
    uint32_t n;
    uint64_t v = 0, version = 0;
    memset(m, 0, sizeof *m);
    mpr_init(&r, data, len);
    if (len > 1024) mpr_fail(&r, "LEAVING too large");
    if (!r.err && mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v")) mpr_uint(&r, &version);
            else if (mpr_key_is(k, kl, "grace_ms")) {
                if (mpr_uint(&r, &v) == 0 && v > WIRE_MAX_DRAIN_GRACE_MS) mpr_fail(&r, "grace too long");
                m->grace_ms = r.err ? 0 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "running")) {
                if (mpr_uint(&r, &v) == 0 && v > 4096) mpr_fail(&r, "too many running jobs");
                m->running = r.err ? 0 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "reason")) {
                const char *s;
                uint32_t sl;
                if (mpr_str(&r, &s, &sl) < 0) break;
                if (sl > WIRE_MAX_REASON) mpr_fail(&r, "reason too long");
                for (uint32_t c = 0; !r.err && c < sl; c++) /* it is logged as it is */
                    if ((unsigned char)s[c] < 0x20 || s[c] == 0x7f)
                        mpr_fail(&r, "a control character in a reason");
                if (!r.err) {
                    memcpy(m->reason, s, sl);
                    m->reason[sl] = '\0';
                }
            } else mpr_skip(&r);
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes in LEAVING";
    if (!why && version != 1) why = "unsupported LEAVING version";
    if (why) {
        snprintf(err, errlen, "leaving: %s", why);
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}
