/* mcp-frontend/console/console.h — the tenant console: a web page every front-end serves at
 * /console, where a person signs in with a tenant's API key and sees what its agents ran
 * (executions and their detail), runs code, works in its sandbox sessions and their snapshots,
 * reads its usage against its quotas, and rotates its key.
 *
 * Stateless like /mcp: a sign-in is a record in Redis (sp:console:<sha256 of the cookie's
 * token>) that names the tenant and its key's hash, so any front-end answers any page, and a
 * key rotated or removed ends the sign-ins made with it. Every page's data comes from the MCP
 * tools themselves: a console request becomes a 2026-07-28 tools/call (or resources/read) for
 * the signed-in tenant, served by the same method table, rate limit, argument checks and
 * handlers as /mcp (calls.h). The HTML, CSS and JavaScript are in console/assets/, compiled
 * into the binary (assets.h); nothing is fetched from elsewhere.
 *
 * It joins the front-end at one place: console_serve registers /console as a route of the HTTP
 * transport (http.h's http_route_add), which never knows it is there. */
#ifndef SP_FE_CONSOLE_H
#define SP_FE_CONSOLE_H
#include <stdint.h>

#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/transport/http.h"

typedef struct console console_t;

/* Sign-in attempts, by how they ended (snakepit_mcp_console_signins_total{outcome}). */
typedef enum {
    CONSOLE_SIGNIN_OK,
    CONSOLE_SIGNIN_INVALID,     /* no such key */
    CONSOLE_SIGNIN_MALFORMED,   /* no key in the form, or not a form */
    CONSOLE_SIGNIN_LIMITED,     /* the client address's attempts are over the rate */
    CONSOLE_SIGNIN_UNAVAILABLE, /* Redis could not be asked */
    CONSOLE_SIGNIN__COUNT
} console_signin_t;

/* Requests refused, by why (snakepit_mcp_console_refusals_total{reason}). */
typedef enum {
    CONSOLE_REFUSED_NOT_FOUND,
    CONSOLE_REFUSED_METHOD,
    CONSOLE_REFUSED_HOST,       /* Host not allowed (DNS rebinding) */
    CONSOLE_REFUSED_ORIGIN,     /* a state-changing request from another site */
    CONSOLE_REFUSED_SIGNED_OUT, /* no sign-in cookie, or one that is unknown or expired */
    CONSOLE_REFUSED_CSRF,       /* a state-changing request without the sign-in's token */
    CONSOLE_REFUSED_BODY,       /* too large, or not what the endpoint reads */
    CONSOLE_REFUSED_UNAVAILABLE,
    CONSOLE_REFUSED__COUNT
} console_refusal_t;

typedef struct {
    uint64_t signins[CONSOLE_SIGNIN__COUNT];
    uint64_t refused[CONSOLE_REFUSED__COUNT];
    uint64_t signouts;
    uint64_t key_rotations;
    uint64_t calls;  /* tool calls and resource reads made for pages */
    uint64_t assets; /* the page's files served */
} console_stats_t;

typedef struct {
    long idle_s;           /* a sign-in unused this long ends */
    long max_s;            /* and one ends this long after it was made, used or not */
    long signin_per_min;   /* sign-in attempts per client address and minute (and the burst) */
} console_conf_t;

#define CONSOLE_CONF_DEFAULTS {.idle_s = 1800, .max_s = 43200, .signin_per_min = 10}

console_t *console_new(fe_t *fe, const console_conf_t *conf);
void console_destroy(console_t **self_p);
/* Serves /console on http from now on (http NULL: no HTTP, nothing to do). */
void console_serve(console_t *self, http_t *http);
const console_stats_t *console_stats(const console_t *self);
const char *console_signin_name(console_signin_t outcome);
const char *console_refusal_name(console_refusal_t reason);

#endif
