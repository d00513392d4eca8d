/* mcp-frontend/mcp/round_trip.c — see round_trip.h. A requestState reads "<base64 of the
 * payload>.<hex HMAC of that base64>"; the payload is
 * {"v":1,"tn":tenant,"m":method,"d":digest,"x":expiry ms,"s": state}. The digest covers the
 * request's parameters without _meta, inputResponses and requestState, keys sorted, so a state
 * minted for one call cannot complete another. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "round_trip.h"

#define KEY_NAME     "sp:mrtr:key"
#define KEY_BYTES    32
#define KEY_RETRY_MS 2000
#define STATE_MAX    16384 /* bytes of a requestState taken back */

struct round_trip {
    loop_t *loop;
    store_t **store_p; /* &fe->store: NULL once the store is gone (shutdown) */
    uint8_t key[KEY_BYTES];
    int shared; /* key is the farm's (from Redis), not this process's own */
    int asking; /* a SET NX + GET is in flight */
    uint64_t timer;
    round_trip_stats_t stats;
};

static void s_hex(const uint8_t *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = hex[in[i] >> 4], out[2 * i + 1] = hex[in[i] & 15];
    out[2 * n] = '\0';
}

static int s_unhex(const char *in, size_t len, uint8_t *out, size_t n)
{
    if (len != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(in + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* ---- the farm's key */

static void s_on_key(void *arg, redisReply *reply)
{
    round_trip_t *self = arg;
    self->asking = 0;
    uint8_t k[KEY_BYTES];
    if (reply && reply->type == REDIS_REPLY_STRING &&
        s_unhex(reply->str, reply->len, k, sizeof k) == 0) {
        if (self->shared && memcmp(self->key, k, sizeof k) != 0)
            log_warn("event=mrtr_key_changed key=" KEY_NAME
                     " effect=\"requestStates sealed before no longer open\"");
        else if (!self->shared)
            log_info("event=mrtr_key_shared key=" KEY_NAME);
        memcpy(self->key, k, sizeof k);
        self->shared = 1;
    }
}

/* Offers a key and reads the one Redis holds. The key has no TTL (README "Redis": a key with a
 * TTL may be evicted, and evicting this one would break every input_required round trip in
 * flight); a Redis that lost it anyway (restarted without persistence, a failover before it
 * was replicated) gets back the key this process already shares, so what it sealed still
 * opens. The first front-end to ask makes the key; every one then reads the same. */
static void s_ask_key(round_trip_t *self)
{
    if (self->asking) return;
    uint8_t fresh[KEY_BYTES];
    char hex[2 * KEY_BYTES + 1];
    if (self->shared)
        memcpy(fresh, self->key, sizeof fresh);
    else if (getrandom(fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh)
        return;
    s_hex(fresh, sizeof fresh, hex);
    if (store_queryf(*self->store_p, NULL, NULL, "SET %s %s NX", KEY_NAME, hex) == 0 &&
        store_queryf(*self->store_p, s_on_key, self, "GET %s", KEY_NAME) == 0)
        self->asking = 1;
}

/* Every connection (at start, after a Redis restart or a failover): the key is put back if
 * Redis lost it, and read again. */
static void s_on_store_connected(void *arg, store_t *store)
{
    (void)store;
    s_ask_key(arg);
}

static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    round_trip_t *self = arg;
    if (!self->shared) s_ask_key(self);
}

round_trip_t *round_trip_new(loop_t *loop, store_t **store_p)
{
    round_trip_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store_p = store_p;
    if (getrandom(self->key, sizeof self->key, 0) != (ssize_t)sizeof self->key)
        log_error("event=mrtr_key_failed error=getrandom"); /* s_ask_key still replaces it */
    s_ask_key(self);
    store_on_connect(*store_p, s_on_store_connected, self);
    self->timer = loop_timer_add(loop, KEY_RETRY_MS, KEY_RETRY_MS, s_on_timer, self);
    return self;
}

void round_trip_destroy(round_trip_t **self_p)
{
    round_trip_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->timer);
    free(self);
    *self_p = NULL;
}

const round_trip_stats_t *round_trip_stats(const round_trip_t *self)
{
    return &self->stats;
}

/* ---- sealing */

static void s_digest(const call_t *c, char out[33])
{
    json_t *p = json_deep_copy(c->params);
    json_object_del(p, "_meta");
    json_object_del(p, "inputResponses");
    json_object_del(p, "requestState");
    char *text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(p);
    sha256_t s;
    uint8_t d[32];
    sha256_init(&s);
    sha256_update(&s, c->method, strlen(c->method) + 1);
    if (text) sha256_update(&s, text, strlen(text));
    sha256_final(&s, d);
    free(text);
    s_hex(d, 16, out);
}

static void s_mac(const round_trip_t *self, const char *data, size_t len, char out[65])
{
    uint8_t mac[32];
    sha256_hmac(self->key, sizeof self->key, data, len, mac);
    s_hex(mac, sizeof mac, out);
}

char *round_trip_seal(round_trip_t *self, const call_t *c, json_t *state, long ttl_ms)
{
    char digest[33];
    s_digest(c, digest);
    json_t *payload = json_pack(
        "{s:i,s:s,s:s,s:s,s:I,s:o}", "v", 1, "tn", c->tenant->name, "m", c->method, "d", digest,
        "x", (json_int_t)(clock_wall_ms() + (uint64_t)ttl_ms), "s", state ? state : json_null());
    char *text = json_dumps(payload, JSON_COMPACT);
    json_decref(payload);
    buf_t b;
    buf_init(&b);
    base64_encode(&b, text, strlen(text));
    free(text);
    char mac[65];
    s_mac(self, (const char *)b.data, b.len, mac);
    buf_printf(&b, ".%s", mac);
    self->stats.sealed++;
    if (!self->shared) log_warn("event=mrtr_state_local reason=no_shared_key_yet");
    return buf_steal(&b, NULL);
}

/* 1 when the two MACs are equal, in time independent of where they differ. */
static int s_same_mac(const char *a, const char *b, size_t n)
{
    unsigned diff = 0;
    for (size_t i = 0; i < n; i++) diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static int s_is(const json_t *payload, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(payload, key));
    return v && !strcmp(v, want);
}

static int s_refuse(round_trip_t *self, call_t *c, const char *why)
{
    self->stats.refused++;
    char msg[200];
    snprintf(msg, sizeof msg, "invalid requestState: %s; send the request again without it", why);
    log_info("event=mrtr_state_refused method=%s tenant=%s why=\"%s\"", c->method, c->tenant->name,
             why);
    call_error(c, RPC_INVALID_PARAMS, msg, NULL);
    return -1;
}

int round_trip_open(round_trip_t *self, call_t *c, json_t **state)
{
    *state = NULL;
    json_t *v = json_object_get(c->params, "requestState");
    if (!v) return 0;
    const char *token = json_string_value(v);
    if (!token || json_string_length(v) > STATE_MAX) return s_refuse(self, c, "not ours");
    const char *dot = strrchr(token, '.');
    char mac[65];
    if (!dot || strlen(dot + 1) != 64) return s_refuse(self, c, "not ours");
    s_mac(self, token, (size_t)(dot - token), mac);
    if (!s_same_mac(mac, dot + 1, 64)) return s_refuse(self, c, "its signature does not verify");
    buf_t b;
    buf_init(&b);
    json_t *payload = NULL;
    if (base64_decode(&b, token, (size_t)(dot - token)) == 0)
        payload = json_loadb((const char *)b.data, b.len, 0, NULL);
    buf_free(&b);
    char digest[33];
    s_digest(c, digest);
    const char *why = NULL;
    if (!json_is_object(payload))
        why = "not ours";
    else if (json_integer_value(json_object_get(payload, "v")) != 1)
        why = "of another version";
    else if (!s_is(payload, "tn", c->tenant->name))
        why = "issued to another caller";
    else if (!s_is(payload, "m", c->method) || !s_is(payload, "d", digest))
        why = "issued for another request";
    else if ((uint64_t)json_integer_value(json_object_get(payload, "x")) < clock_wall_ms())
        why = "expired";
    if (why) {
        json_decref(payload);
        return s_refuse(self, c, why);
    }
    self->stats.opened++;
    *state = json_incref(json_object_get(payload, "s"));
    json_decref(payload);
    return 0;
}

int round_trip_responses(call_t *c, json_t **responses)
{
    json_t *r = json_object_get(c->params, "inputResponses");
    *responses = NULL;
    if (!r) {
        json_object_set_new(c->params, "inputResponses", json_object());
        *responses = json_object_get(c->params, "inputResponses");
        return 0;
    }
    const char *k;
    json_t *v;
    int ok = json_is_object(r);
    json_object_foreach(r, k, v) ok = ok && json_is_object(v);
    if (!ok) {
        call_error(c, RPC_INVALID_PARAMS,
                   "inputResponses must be an object whose values are the results of the "
                   "requests asked for (ElicitResult, CreateMessageResult, ListRootsResult)",
                   NULL);
        return -1;
    }
    *responses = r;
    return 0;
}

/* ---- building InputRequiredResults */

json_t *round_trip_input_required(json_t *requests, char *request_state)
{
    json_t *r = json_pack("{s:s}", "resultType", "input_required");
    if (requests) json_object_set_new(r, "inputRequests", requests);
    if (request_state) json_object_set_new(r, "requestState", json_string(request_state));
    free(request_state);
    return r;
}

json_t *round_trip_elicit(const char *message, const char *field, const char *type)
{
    return json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:{s:{s:s}},s:[s]}}}", "method", "elicitation/create",
                     "params", "mode", "form", "message", message, "requestedSchema", "type",
                     "object", "properties", field, "type", type, "required", field);
}

json_t *round_trip_sample(const char *prompt, long max_tokens)
{
    return json_pack("{s:s,s:{s:[{s:s,s:{s:s,s:s}}],s:I}}", "method", "sampling/createMessage",
                     "params", "messages", "role", "user", "content", "type", "text", "text",
                     prompt, "maxTokens", (json_int_t)max_tokens);
}

json_t *round_trip_list_roots(void)
{
    return json_pack("{s:s,s:{}}", "method", "roots/list", "params");
}

const char *round_trip_elicited(const json_t *response, const char *field)
{
    const char *action = json_string_value(json_object_get(response, "action"));
    if (!action || strcmp(action, "accept") != 0) return NULL;
    return json_string_value(json_object_get(json_object_get(response, "content"), field));
}
