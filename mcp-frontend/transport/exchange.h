/* mcp-frontend/transport/exchange.h — the insides of the HTTP transport (http.h is its face): its
 * settings and counters, the state it shares, and one HTTP request's way through the
 * front-end as an exchange_t (see http.c for why answers are parked and connections resumed).
 * exchange.c holds the plumbing (responses, SSE streams, the emitters calls answer through),
 * exchange_mcp.c the /mcp endpoint, http.c the daemon and the routes. */
#ifndef SP_FE_EXCHANGE_H
#define SP_FE_EXCHANGE_H
#include <microhttpd.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/metrics_http.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/fe.h"

typedef struct exchange exchange_t;

typedef struct http http_t;

/* A route served beside /mcp by a module above the transport (the console): it registers once
 * (http.h's http_route_add) and from then on every call of MHD's access handler for a request
 * under its prefix goes to serve, which answers with the plumbing below. headers decorates every
 * response of those requests; done is told when one ends (before the exchange is freed, or left
 * orphaned to a lookup in flight). */
typedef enum MHD_Result(http_serve_fn)(void *arg, exchange_t *ex, const char *url);
typedef void(http_headers_fn)(void *arg, exchange_t *ex, struct MHD_Response *r);
typedef void(http_done_fn)(void *arg, exchange_t *ex);
typedef struct {
    const char *prefix; /* the path itself and what is below it ("/console", "/console/...") */
    http_serve_fn *serve;
    http_headers_fn *headers; /* may be NULL */
    http_done_fn *done;       /* may be NULL */
    void *arg;
} http_route_t;

#define HTTP_MAX_ROUTES 4

/* Requests refused before they reached MCP, by reason (snakepit_mcp_rejections_total). */
typedef enum {
    HTTP_REFUSED_NOT_FOUND,
    HTTP_REFUSED_BAD_HOST,
    HTTP_REFUSED_BAD_ORIGIN,
    HTTP_REFUSED_HTTP_METHOD,
    HTTP_REFUSED_NOT_ACCEPTABLE,
    HTTP_REFUSED_CONTENT_TYPE,
    HTTP_REFUSED_BODY_TOO_LARGE,
    HTTP_REFUSED_BAD_PROTOCOL_VERSION,
    HTTP_REFUSED_UNAUTHORIZED,
    HTTP_REFUSED_AUTH_UNAVAILABLE,
    HTTP_REFUSED_TOO_MANY_SESSIONS,
    HTTP_REFUSED_SESSION_FAILED,
    HTTP_REFUSED_MISSING_SESSION,
    HTTP_REFUSED_UNKNOWN_SESSION,
    HTTP_REFUSED_UNKNOWN_STREAM, /* Last-Event-ID naming no stream we keep */
    HTTP_REFUSED_SSE_BACKLOG,    /* a client stopped reading its stream: it was ended */
    HTTP_REFUSED_TENANT_CAP,     /* the tenant holds its cap of GET streams (holds.h) */
    HTTP_REFUSED__COUNT
} http_refusal_t;

typedef enum {
    AUTH_FAILED_MISSING,
    AUTH_FAILED_MALFORMED,
    AUTH_FAILED_INVALID,
    AUTH_FAILED_UNAVAILABLE, /* Redis could not say: fail closed */
    AUTH_FAILED__COUNT
} auth_failure_t;

#define HTTP_STATUS_MAX 600

typedef struct {
    uint64_t responses[HTTP_STATUS_MAX]; /* by status code */
    uint64_t refused[HTTP_REFUSED__COUNT];
    uint64_t auth_failures[AUTH_FAILED__COUNT];
} http_stats_t;

typedef struct {
    char listen[128];        /* HOST:PORT */
    long max_body;           /* bytes of one request body */
    char allow_origin[1024]; /* comma list; empty = loopback origins only; * = any */
    char allow_host[1024];   /* comma list of Host values accepted besides loopback names */
    char tls_cert[512];      /* PEM files: HTTPS when both are given */
    char tls_key[512];
    int allow_remote;          /* plain HTTP on a non-loopback address (behind a TLS proxy) */
    char anonymous_tenant[65]; /* requests without a key run as this tenant (loopback only) */
    long sse_keepalive_s;      /* comment lines on idle SSE streams */
} http_conf_t;

struct http {
    fe_t *fe;
    http_conf_t conf;
    metrics_render_fn *render; /* GET /metrics */
    void *render_arg;
    http_stats_t stats;
    struct MHD_Daemon *daemon;
    int epoll_fd;
    int loopback; /* bound to a loopback address */
    int kick;     /* a connection was resumed: run MHD before waiting */
    int running;  /* inside MHD_run: its callbacks must not run it again */
    uint64_t keepalive_timer;
    exchange_t *all; /* every exchange alive (shutdown must resume them) */
    http_route_t routes[HTTP_MAX_ROUTES]; /* served beside /mcp (http_route_add) */
    int n_routes;
};

typedef enum {
    EX_BODY,      /* receiving the request body */
    EX_AUTH,      /* suspended: waiting for Redis to say who the key belongs to */
    EX_SESSION,   /* suspended: waiting for Redis to say what the legacy session is */
    EX_CALL,      /* suspended: the MCP call is in flight */
    EX_READY,     /* the answer is parked: queue it at the next handler call */
    EX_STREAMING, /* an SSE response is queued and open */
    EX_DONE,      /* a response was queued */
} exchange_state_t;

struct exchange {
    http_t *http;
    struct MHD_Connection *conn;
    exchange_state_t state;
    int method; /* 'P'OST, 'G'ET, 'D'ELETE, 'O'PTIONS, '?' other */
    buf_t body;
    int too_big;
    int suspended;
    int watch_fd; /* a suspended modern request's socket, watched for the client leaving */
    int accept_json, accept_sse;
    uint64_t start_us;
    tenant_t *tenant;
    mcp_session_t *session; /* held */
    int new_session;        /* the answer carries Mcp-Session-Id */
    int modern;             /* a 2026-07-28 request: its own scope, and a disconnect cancels it */
    call_t *call;           /* the call in flight, until its final answer */
    const endpoint_t *endpoint; /* the URL's (compat.h); NULL: /mcp */
    const http_route_t *route; /* a route beside /mcp serves it; NULL: /mcp */
    void *route_state;         /* the route's, let go of by its done */
    /* a parked plain answer */
    unsigned status;
    char *answer;            /* JSON text (or of answer_type), or NULL for an empty body */
    const char *answer_type; /* NULL: application/json */
    size_t answer_len;
    long retry_after_s; /* > 0: add Retry-After */
    int www_authenticate;
    /* an SSE answer */
    int sse;        /* the answer is (or will be) an event stream */
    int get_stream; /* the session's GET stream */
    buf_t sse_out;  /* events not yet handed to MHD */
    size_t sse_off;
    int sse_final; /* end the stream once sse_out is drained */
    uint64_t last_write_ms;
    int headers_checked;
    int auth_pending; /* a key lookup is in flight */
    int orphaned;     /* MHD is done with it; the last lookup's callback frees it */
    /* a legacy request: its parsed body, kept across the session lookup */
    rpc_msg_t rpc;
    int has_rpc;
    int session_pending;            /* a session lookup is in flight */
    int session_looked_up;          /* ... and has answered */
    int session_unavailable;        /* ... that Redis could not be asked */
    struct logged_stream *stream;   /* a legacy POST's SSE events, logged for resumption */
    struct stream_follower *follow; /* a GET stream: the session's, or a resumed one */
    struct hold *sse_hold;          /* ... counted in its tenant's max_sse_streams (holds.h) */
    int hold_pending;               /* that take is in flight */
    int hold_answered;              /* ... and has answered (sse_hold NULL: refused) */
    long hold_count;                /* what the tenant held when it answered */
    exchange_t *next, **prev;
};

/* A new exchange for a request MHD just began, on h's list. */
exchange_t *exchange_new(http_t *h, struct MHD_Connection *conn, const char *method);
/* Takes a chunk of the request body (past --max-body it is discarded and 413 answered). */
void exchange_take_body(exchange_t *ex, const char *data, size_t len);
void exchange_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
void exchange_keepalive(loop_t *loop, void *arg);
void exchange_free(exchange_t *ex);
void exchange_close_streams(http_t *self);

/* The emitter HTTP calls answer through (call.h), and the session notify sink for HTTP */
void exchange_emit(void *ctx, call_t *call, json_t *msg, int final);
/* A GET stream's events (stream_log.h's follower), and its end. */
void exchange_follow_event(void *ctx, const char *id, const json_t *msg, int final);
void exchange_follow_end(void *ctx);
/* A request header (case-insensitive name), or NULL. */
const char *exchange_header(exchange_t *ex, const char *name);
/* Queues the answer if it is ready (or starts its SSE stream), else suspends. */
enum MHD_Result exchange_answer_now_or_wait(exchange_t *ex);

const char *http_refusal_name(http_refusal_t reason);
const char *auth_failure_name(auth_failure_t reason);

/* Responses: queued now (only from inside MHD's access handler), or parked for later. */
enum MHD_Result exchange_queue_text(exchange_t *ex, unsigned status, const char *ctype, char *text,
                                    size_t len); /* takes text (NULL: empty body) */
enum MHD_Result exchange_queue_json(exchange_t *ex, unsigned status, json_t *msg);
enum MHD_Result exchange_queue_parked(exchange_t *ex);
void exchange_park(exchange_t *ex, unsigned status, json_t *msg);
/* Keeps a text answer of media type ctype (static) for the next handler call; takes text. */
void exchange_park_text(exchange_t *ex, unsigned status, const char *ctype, char *text, size_t len);
void exchange_resume(exchange_t *ex);
void exchange_suspend(exchange_t *ex);
enum MHD_Result exchange_start_sse(exchange_t *ex);
/* An HTTP-level refusal with a JSON-RPC error body, counted and logged: without an id when it
 * comes before the body could be read, else (exchange_refuse_id) with the request's. */
enum MHD_Result exchange_refuse(exchange_t *ex, unsigned status, int code, http_refusal_t reason,
                                const char *message);
enum MHD_Result exchange_refuse_id(exchange_t *ex, unsigned status, int code, http_refusal_t reason,
                                   const char *message, const json_t *id);

#endif
