/* mcp-frontend/console/request.h — the console's insides, shared by its files: the console
 * itself, one request's state as it goes through its steps, and the verbs each file serves.
 * console.c routes a request to its row; request.c answers it; signin.c keeps sign-ins (made,
 * found, ended, the key rotated); calls.c turns page requests into the MCP tools' calls.
 *
 * A request waits for Redis or the farm as the transport's exchanges do (exchange.h): it is
 * suspended in EX_AUTH while a lookup is in flight (ex->auth_pending, so that a client that
 * leaves orphans the exchange and the lookup's callback frees it), in EX_CALL while a tool
 * call runs, and its answer is parked for the next access handler call. */
#ifndef SP_FE_CONSOLE_REQUEST_H
#define SP_FE_CONSOLE_REQUEST_H
#include <jansson.h>
#include <stdint.h>

#include "mcp-frontend/state/store.h"
#include "mcp-frontend/transport/exchange.h"
#include "counts.h"

#define CONSOLE_COOKIE    "sp_console"
#define CONSOLE_TOKEN_HEX 64 /* a sign-in token: 32 random bytes */

typedef struct console console_t;

struct console {
    fe_t *fe;
    console_conf_t conf;
    console_stats_t stats;
    int secure_cookie;    /* the browser reaches us over TLS (here or at a proxy) */
    store_script_t *find; /* signin.c's scripts, made on first use */
    store_script_t *create;
};

typedef struct console_req console_req_t;
typedef void(console_op_fn)(console_req_t *r);

enum {
    OP_PUBLIC,    /* anyone: the page, its files, the sign-in */
    OP_SIGNED_IN, /* a sign-in's cookie (reads) */
    OP_CSRF,      /* and its CSRF token in X-CSRF-Token (everything that changes something) */
};

typedef struct {
    char method;      /* 'G'ET or 'P'OST */
    const char *path; /* the path, or with prefix set what it starts with */
    int prefix;
    int auth;      /* OP_* */
    long max_body; /* bytes a POST may send */
    console_op_fn *run;
} console_op_t;

struct console_req {
    console_t *console;
    exchange_t *ex;
    const console_op_t *op;
    char rest[256]; /* the path past a prefix row's */
    int ran;        /* its handler has run: what resumes it now is its answer */
    /* the sign-in the request carries (signin.c) */
    int signed_in;
    char token_hash[65];
    char tenant[65];
    char key_hash[65];
    char csrf[65];
    long long expires_ms; /* the sign-in ends then at the latest (wall clock) */
    int cookie_sent;      /* a sign-in cookie came with it, known or not */
    /* what its answer carries besides the body */
    char set_cookie[320];
    const char *cache;     /* Cache-Control; NULL: no-store */
    char disposition[160]; /* Content-Disposition, or "" */
    char etag[24];         /* an asset's, or "" */
    char secret[600];      /* a key while it is checked or handed out (zeroed after) */
};

/* ---- request.c: answers (parked, then queued by the transport's loop) */
void console_reply(console_req_t *r, unsigned status, json_t *body); /* steals body */
void console_reply_text(console_req_t *r, unsigned status, const char *ctype, char *text,
                        size_t len); /* takes text */
/* A refusal, counted and logged: {"error": message, "reason": name}. */
void console_refuse(console_req_t *r, unsigned status, console_refusal_t why, const char *message);
/* The client's address as the front-end sees it ("?" when unknown). */
void console_client(const console_req_t *r, char *out, size_t cap);
/* Back from a lookup made with ex as its argument: the request, or NULL when it is no more to
 * be answered (the client left: the exchange is freed then, or something answered already). */
console_req_t *console_back(exchange_t *ex);
/* Suspends r's exchange until a lookup answers (ex->auth_pending). */
void console_wait(console_req_t *r);

/* ---- signin.c */
void signin_find(console_req_t *r);    /* the cookie's sign-in; r resumes when it is known */
void signin_run(console_req_t *r);     /* POST /console/signin */
void signout_run(console_req_t *r);    /* POST /console/signout */
void me_run(console_req_t *r);         /* GET /console/api/me */
void key_rotate_run(console_req_t *r); /* POST /console/api/key */

/* ---- calls.c */
void calls_tool(console_req_t *r);     /* POST /console/api/tools/NAME */
void calls_resource(console_req_t *r); /* POST /console/api/resource */

/* ---- assets.c: the page's files, compiled in */
typedef struct {
    const char *name;  /* "console.js" */
    const char *ctype; /* with charset for text */
    const unsigned char *data;
    size_t len;
    char etag[24]; /* "\"<16 hex digits of its SHA-256>\"" */
} console_asset_t;
const console_asset_t *console_asset(const char *name); /* NULL when there is none */

#endif
