/* mcp-frontend/tools/session_resource.h — the resource sandbox://sessions/{id}, for
 * clients that browse: a session's record (profile, times, cells, memory, limits, state) and,
 * while it lives, what it holds — each variable's name, type and short repr, and its workspace's
 * files — asked of the session's own sandbox. Another tenant's id is "not found". */
#ifndef SP_FE_SESSION_RESOURCE_H
#define SP_FE_SESSION_RESOURCE_H
#include "mcp-frontend/rpc/call.h"

#define SESSION_URI_BASE "sandbox://sessions/"

/* resources/read of uri: 1 when it is a session's URI (the call is answered, now or later), 0
 * when it is not. */
int session_resource_read(call_t *c, const char *uri);
/* The resource template, for resources/templates/list. */
json_t *session_resource_template(void);

#endif
