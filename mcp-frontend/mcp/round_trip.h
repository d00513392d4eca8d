/* mcp-frontend/mcp/round_trip.h — multi round-trip requests (MCP 2026-07-28
 * basic/patterns/mrtr): when a tools/call, prompts/get or resources/read needs something only
 * the client can give (an answer from the user, a model's completion, its roots), the server
 * answers with an InputRequiredResult — resultType "input_required", the requests keyed by name,
 * and an opaque requestState — and the client retries the same request with inputResponses and that
 * state. No server-side state: any front-end can take the retry.
 *
 * requestState is attacker-controlled when it comes back, so it is sealed here: a JSON
 * payload with HMAC-SHA256, binding the tenant, the method and a digest of the request's
 * salient parameters, and an expiry (mrtr §"Server Requirements" 4-5); a state that fails any
 * check is refused -32602. The key is shared by every front-end through Redis (sp:mrtr:key,
 * made once with SET NX, no TTL so that it is never evicted, offered again on every connection
 * in case Redis lost it), so a retry may land anywhere; until Redis has answered, a key of
 * this process's own is used (its states verify only here, and that is logged). */
#ifndef SP_FE_ROUND_TRIP_H
#define SP_FE_ROUND_TRIP_H
#include <jansson.h>
#include <stdint.h>

#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/state/store.h"

typedef struct round_trip round_trip_t;

typedef struct {
    uint64_t sealed, opened, refused; /* states made, verified, refused (tampered, expired...) */
} round_trip_stats_t;

round_trip_t *round_trip_new(loop_t *loop, store_t **store_p);
void round_trip_destroy(round_trip_t **self_p);
const round_trip_stats_t *round_trip_stats(const round_trip_t *self);

/* A requestState for c's retry carrying state (stolen), valid ttl_ms. Caller frees. */
char *round_trip_seal(round_trip_t *self, const call_t *c, json_t *state, long ttl_ms);
/* The state c carries back, verified: 0 with *state (new reference; NULL when c carries no
 * requestState), or -1 when c was answered -32602 (tampered, expired, another tenant's or
 * another request's). */
int round_trip_open(round_trip_t *self, call_t *c, json_t **state);
/* c's inputResponses: 0 with *responses (borrowed; an empty object when absent), or -1 when c
 * was answered -32602 (not an object of objects). */
int round_trip_responses(call_t *c, json_t **responses);

/* An InputRequiredResult: requests (stolen; may be NULL) and requestState (taken; may be
 * NULL). At least one of them is given. */
json_t *round_trip_input_required(json_t *requests, char *request_state);
/* The request objects inputRequests holds (no jsonrpc, no id). */
json_t *round_trip_elicit(const char *message, const char *field, const char *type);
json_t *round_trip_sample(const char *prompt, long max_tokens);
json_t *round_trip_list_roots(void);
/* The value an accepted form elicitation returned for field, or NULL. */
const char *round_trip_elicited(const json_t *response, const char *field);

#endif
