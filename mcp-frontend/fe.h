/* mcp-frontend/fe.h — the front-end process as one object: its configuration and the
 * long-lived parts every module reaches (the loop, the broker client, Redis, the session,
 * tenant and job tables). One per process, created by main.c; everything runs on its loop
 * thread, so nothing here is locked. */
#ifndef SP_FE_FE_H
#define SP_FE_FE_H
#include <stdint.h>

#include "../common/loop.h"
#include "../common/redis_url.h"
#include "store.h"

#ifdef SNAKEPIT_VERSION
#define FE_VERSION SNAKEPIT_VERSION /* from the Makefile */
#else
#define FE_VERSION "0.0.0-dev"
#endif

typedef struct {
    char http[128]; /* HOST:PORT; empty with --stdio means no HTTP */
    int stdio;
    char broker[256];
    char redis[512];
    char tenant[65]; /* the stdio identity */
    char log_level[16];
    long max_body;           /* bytes of one HTTP request body */
    char allow_origin[1024]; /* comma list; empty = loopback origins only */
    char allow_host[1024];   /* comma list of extra Host values accepted */
    char tls_cert[512];
    char tls_key[512];
    int allow_remote;          /* plain HTTP on a non-loopback address */
    char anonymous_tenant[65]; /* HTTP without a key runs as this tenant (loopback only) */
    int test_fixtures;         /* the conformance suite's test_* tools, resources, prompts */
    long max_sessions;
    long max_sessions_tenant; /* one tenant cannot take every session */
    long session_idle_s;
    long auth_cache_ms;
    long local_rate_pct;     /* the local limiter's share of a tenant's rate when Redis is down */
    long queue_allowance_ms; /* added to a job's timeout for its deadline */
    long redis_timeout_ms;
    long record_buffer; /* writes buffered while Redis is away */
    long record_ttl_s;
    long code_cap;             /* bytes of code kept in a record (else its sha256) */
    long head_cap;             /* bytes of stdout/stderr kept in a record */
    long result_cap;           /* bytes of the structured result kept in a record */
    long page_size;            /* list pagination */
    long max_inflight_session; /* requests in flight per session */
    long sse_keepalive_s;
    char curve_server_key[64];
    char curve_public_key[64];
    char curve_secret_key[64];
    long heartbeat_ms;
    long broker_wait_ms;      /* how long a job waits for a broker connection */
    long record_wait_ms;      /* how long an answer waits for its record to reach Redis */
    char broker_instance[65]; /* the broker's --instance: its snapshot in Redis */
} fe_conf_t;

typedef struct sessions sessions_t;
typedef struct tenants tenants_t;
typedef struct limiter limiter_t;
typedef struct http http_t;
typedef struct stdio_tx stdio_tx_t;

typedef struct fe {
    fe_conf_t conf;
    loop_t *loop;
    void *zmq_ctx;
    store_t *store;
    redis_url_t redis_url;
    sessions_t *sessions;
    tenants_t *tenants;
    limiter_t *limiter;
    struct jobs *jobs;             /* jobs.h: the link to the farm */
    struct executions *executions; /* execution.h: tool calls running on the farm */
    struct tasks *tasks;           /* tasks.h */
    struct tools *tools;           /* tools.h: the tools/list and tools/call table */
    http_t *http;
    stdio_tx_t *stdio;
    char instance[80]; /* host:pid, for logs and records */
    struct metrics_pub *snapshot; /* sp:metrics:mcp:{instance} for `snakepit status` */
    int stopping;
} fe_t;

#endif
