/* mcp-frontend/compat/compat.h — the drop-in endpoints: one per older Python-sandbox MCP server
 * that snakepit replaces, each with exactly that server's tool names, parameters, defaults,
 * result shapes and capabilities (its resources and prompts, where it had some), so its users
 * switch by changing a URL or a command line. Everything still runs on the farm like /mcp: the
 * same keys and tenants, rate limits, sandbox, records and metrics. Nothing of the old servers'
 * designs comes back: no code runs in this process and nothing reads the host's files.
 *
 *   python-sandbox  /mcp/compat/python-sandbox  compat_python_sandbox.c
 *   py-sandbox      /mcp/compat/py-sandbox      compat_py_sandbox.c
 *   secure-sandbox  /mcp/compat/secure-sandbox  compat_secure_sandbox.c (and _resources.c)
 *   exec-sandbox    /mcp/compat/exec-sandbox    compat_exec_sandbox.c
 *   code-sandbox    /mcp/compat/code-sandbox    compat_code_sandbox.c
 *
 * HTTP picks the endpoint from the URL, stdio from snakepit-mcp --stdio --compat NAME. */
#ifndef SP_FE_COMPAT_H
#define SP_FE_COMPAT_H
#include "mcp-frontend/rpc/endpoint.h"

typedef struct compat compat_t;

/* Every endpoint with its tool table (page_size as tools.h's). */
compat_t *compat_new(long page_size);
void compat_destroy(compat_t **self_p);
/* The endpoint of that name, or NULL. */
const endpoint_t *compat_find(const compat_t *self, const char *name);
/* The endpoint an HTTP path names: 0 with *ep NULL for /mcp, 0 with *ep set for
 * /mcp/compat/NAME, -1 for any other path (404). */
int compat_route(const compat_t *self, const char *path, const endpoint_t **ep);
/* "python-sandbox, py-sandbox, ..." for messages and --help. */
const char *compat_names(const compat_t *self);

#endif
