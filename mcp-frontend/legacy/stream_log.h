/* mcp-frontend/legacy/stream_log.h — event ids and resumption for the SSE streams of legacy
 * sessions (MCP 2025-11-25 transports §"Resumability and Redelivery"): every event on a session's
 * streams carries an id "<stream>.<n>", and every event is also appended to that stream's log
 * in Redis, so a client that loses its connection — to a network blip, or to a front-end that
 * died — reconnects with GET and Last-Event-ID to any front-end and gets what followed on that
 * stream: the rest of a call's progress and its result, or the session's notifications.
 *
 *   sp:t:{T}:sess:<id>:ev:<stream>     stream (XADD): field m = the JSON-RPC message, f = 1 on
 *                                      the final one; expires --stream-replay-s after its last
 *                                      event; capped at 10,000 entries
 *   sp:t:{T}:sess:<id>:ev:<stream>:fw  string: the inbox (bus.h) of the front-end that follows
 *                                      the stream for a reconnected client
 *
 * <stream> is "g" for the session's GET stream (written by any front-end: mcp_session_notify,
 * resource updates) or eight hex digits for a POST's response stream (written by the front-end
 * running the call, which keeps logging when its client has gone: a disconnect is not a
 * cancellation there). Whoever appends also publishes the event to the follower's inbox, in
 * the same script, so a follower misses nothing between its replay and the live events. One
 * follower per stream: the newest. 2026-07-28 streams have no ids and no resumption. */
#ifndef SP_FE_SSELOG_H
#define SP_FE_SSELOG_H
#include <jansson.h>

#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/mcp_session.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/store.h"

/* The Lua function every script that writes an event log defines: appends json to the log
 * ev under id ("*": Redis numbers it; else "0-<n>"), keeps the log for ttl ms, and hands the
 * event to the stream's follower. Returns the event's id. */
#define STREAM_LOG_LUA_APPEND                                                                      \
    "local function append(ev, id, json, final, ttl)\n"                                            \
    "  local eid = redis.call('XADD', ev, 'MAXLEN', '~', 10000, id, 'm', json, 'f', final)\n"      \
    "  redis.call('PEXPIRE', ev, ttl)\n"                                                           \
    "  local fw = redis.call('GET', ev .. ':fw')\n"                                                \
    "  if fw then redis.call('PUBLISH', fw, ev .. '\\n' .. eid .. '\\n' .. final .. '\\n' .. "     \
    "json) end\n"                                                                                  \
    "  return eid\n"                                                                               \
    "end\n"

typedef struct stream_log stream_log_t;
typedef struct logged_stream logged_stream_t;
typedef struct stream_follower stream_follower_t;

typedef struct {
    long replay_s; /* how long a stream's events can be replayed after its last one */
} stream_log_conf_t;

typedef struct {
    uint64_t appended; /* events logged */
    uint64_t resumed;  /* GET with Last-Event-ID answered */
    uint64_t replayed; /* events sent again to reconnected clients */
    uint64_t unknown;  /* Last-Event-IDs naming no stream we keep */
} stream_log_stats_t;

/* Subscribes to the bus's inbox, and becomes where HTTP sessions' notifications go. */
stream_log_t *stream_log_new(loop_t *loop, store_t **store_p, bus_t *bus, mcp_sessions_t *sessions,
                             const stream_log_conf_t *conf);
void stream_log_destroy(stream_log_t **self_p);
const stream_log_stats_t *stream_log_stats(const stream_log_t *self);
long stream_log_replay_ms(const stream_log_t *self);

/* ---- writing a POST's response stream */

/* The log of a new response stream of s. */
logged_stream_t *logged_stream_new(stream_log_t *self, const mcp_session_t *s);
/* Logs msg (final: the stream's last) and returns the event id to send with it (valid until
 * the next call). */
const char *logged_stream_append(logged_stream_t *st, const json_t *msg, int final);
void logged_stream_free(logged_stream_t **st_p);
/* An emitter (call.h) that only logs: what a call's stream becomes when its client has gone.
 * ctx is the stream, freed with the final message. */
void logged_stream_emit(void *ctx, call_t *call, json_t *msg, int final);

/* ---- reading: a GET stream, fresh or resumed */

/* Each event for the client (id: the SSE id; final: the stream ends after it), and the end of
 * the follow (the stream was taken over, or the session ended). */
typedef void(stream_follower_event_fn)(void *ctx, const char *id, const json_t *msg, int final);
typedef void(stream_follower_end_fn)(void *ctx);

/* Follows s's GET stream (last_event_id NULL: from now on), or the stream last_event_id names
 * (a GET with Last-Event-ID): replays what followed it, then the live events. NULL when
 * last_event_id names no stream of s that is still kept (too old, or not ours). */
stream_follower_t *stream_follower_start(stream_log_t *self, mcp_session_t *s,
                                         const char *last_event_id, stream_follower_event_fn *event,
                                         stream_follower_end_fn *end, void *ctx);
void stream_follower_stop(stream_follower_t **f_p);

#endif
