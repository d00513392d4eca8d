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
 * handlers as /mcp (calls.c). The HTML, CSS and JavaScript are in console/assets/, compiled
 * into the binary (assets.c); nothing is fetched from elsewhere.
 *
 * It joins the front-end at one place: console_serve registers /console as a route of the HTTP
 * transport (http.h's http_route_add), which never knows it is there. */
#ifndef SP_FE_CONSOLE_H
#define SP_FE_CONSOLE_H
#include <stdint.h>

#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/transport/http.h"
#include "counts.h"

typedef struct console console_t;

console_t *console_new(fe_t *fe, const console_conf_t *conf);
void console_destroy(console_t **self_p);
/* Serves /console on http from now on (http NULL: no HTTP, nothing to do). */
void console_serve(console_t *self, http_t *http);
const console_stats_t *console_stats(const console_t *self);

#endif
