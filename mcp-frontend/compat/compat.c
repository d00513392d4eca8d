/* mcp-frontend/compat/compat.c — see compat.h. One row per drop-in endpoint: its name, how it
 * introduces itself, and its tool rows (each in the file of the server it stands in for). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "mcp-frontend/tools/tools.h"
#include "compat.h"
#include "compat_code_sandbox.h"
#include "compat_exec_sandbox.h"
#include "compat_py_sandbox.h"
#include "compat_python_sandbox.h"
#include "compat_secure_resources.h"
#include "compat_secure_sandbox.h"

#define COMPAT_PREFIX "/mcp/compat/"

typedef struct {
    const char *name;
    const char *title;
    const char *instructions;
    const tool_t *rows;
    const endpoint_resource_t *resources; /* NULL: that server declared no resources */
    const endpoint_prompt_t *prompts;     /* NULL: nor prompts */
} compat_server_t;

static const compat_server_t s_servers[] = {
    {"python-sandbox", "snakepit, as the Python Sandbox Server (python-sandbox)",
     "Runs Python code in a secure sandbox. execute_code runs code and returns its output, the "
     "value of `result` (or of the last expression) and the names it defined; validate_code "
     "checks code without running it; get_sandbox_info lists the security profiles, their "
     "modules and the limits. Every execution runs in its own isolated process on the snakepit "
     "farm; no state survives between calls.",
     compat_python_sandbox_tools},
    {"py-sandbox", "snakepit, as py-sandbox",
     "run_python executes Python code in a sandbox with a timeout, a memory limit and an output "
     "limit, and can return the final values of named variables. Every call runs in a fresh "
     "isolated interpreter on the snakepit farm.",
     compat_py_sandbox_tools},
    {"secure-sandbox", "snakepit, as mcp-secure-sandbox",
     "run_sandbox_code runs Python code in a sandbox whose workspace persists between calls; "
     "validate_json_data checks JSON against a JSON Schema (draft 7) or one of the predefined "
     "schemas config, user and dataset; validate_csv_data checks CSV headers and column types; "
     "get_sandbox_metrics reports your usage; create_state_snapshot, restore_state_snapshot, "
     "list_state_snapshots and delete_state_snapshot save and restore the workspace. Resources: "
     "sandbox://status, sandbox://logs (your recent executions) and sandbox://schemas; prompts: "
     "generate_secure_script and diagnose_validation_error.",
     compat_secure_sandbox_tools, compat_secure_sandbox_resources, compat_secure_sandbox_prompts},
    {"exec-sandbox", "snakepit, as mcp-python-exec-sandbox",
     "execute_python runs a Python script in a sandbox, in a fresh directory it may write. "
     "Dependencies declared in a PEP 723 `# /// script` block (or in `dependencies`) are met from "
     "the packages the sandbox has installed, else from the operator's package source when there "
     "is one; the sandbox has no network. check_environment describes the sandbox, "
     "validate_script checks a script's metadata without running it.",
     compat_exec_sandbox_tools},
    {"code-sandbox", "snakepit, as the Python Code Sandbox",
     "check_syntax checks Python code for syntax errors without running it; test_code runs it in "
     "a sandbox with time, CPU and memory limits and returns stdout, stderr and the exit code as "
     "JSON.",
     compat_code_sandbox_tools},
};

#define N_SERVERS (sizeof s_servers / sizeof s_servers[0])

struct compat {
    endpoint_t endpoints[N_SERVERS]; /* parallel to s_servers */
    char names[256];
};

compat_t *compat_new(long page_size)
{
    compat_t *self = xcalloc(1, sizeof *self);
    buf_t names;
    buf_init(&names);
    for (size_t i = 0; i < N_SERVERS; i++) {
        const compat_server_t *s = &s_servers[i];
        endpoint_t *ep = &self->endpoints[i];
        ep->name = s->name;
        ep->title = s->title;
        ep->instructions = s->instructions;
        ep->tools = tools_new(page_size);
        ep->resources = s->resources;
        ep->prompts = s->prompts;
        tools_add(ep->tools, s->rows);
        buf_printf(&names, "%s%s", i ? ", " : "", s->name);
    }
    snprintf(self->names, sizeof self->names, "%s", (const char *)names.data);
    buf_free(&names);
    return self;
}

void compat_destroy(compat_t **self_p)
{
    compat_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < N_SERVERS; i++) tools_destroy(&self->endpoints[i].tools);
    free(self);
    *self_p = NULL;
}

const endpoint_t *compat_find(const compat_t *self, const char *name)
{
    for (size_t i = 0; i < N_SERVERS; i++)
        if (!strcmp(self->endpoints[i].name, name)) return &self->endpoints[i];
    return NULL;
}

int compat_route(const compat_t *self, const char *path, const endpoint_t **ep)
{
    *ep = NULL;
    if (!strcmp(path, "/mcp") || !strcmp(path, "/mcp/")) return 0;
    size_t n = strlen(COMPAT_PREFIX);
    if (strncmp(path, COMPAT_PREFIX, n) != 0) return -1;
    char name[64];
    size_t len = strcspn(path + n, "/");
    /* one trailing slash is allowed, as for /mcp/ */
    if (len >= sizeof name || (path[n + len] && strcmp(path + n + len, "/") != 0)) return -1;
    memcpy(name, path + n, len);
    name[len] = '\0';
    *ep = compat_find(self, name);
    return *ep ? 0 : -1;
}

const char *compat_names(const compat_t *self)
{
    return self->names;
}
