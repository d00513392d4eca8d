/* mcp-frontend/mcp/prompts.h — the prompt write_sandbox_code, which tells a model how to write
 * code for this sandbox (made from the profile table, so it names what the executors
 * enforce), and completion/complete for its `profile` argument and for the id of the
 * sandbox://executions/{id} template (the caller's newest execution ids). */
#ifndef SP_FE_PROMPTS_H
#define SP_FE_PROMPTS_H
#include "mcp-frontend/rpc/call.h"

typedef struct prompts prompts_t;

typedef struct {
    int fixtures; /* the conformance suite's test_* prompts and completions too */
} prompts_conf_t;

prompts_t *prompts_new(const prompts_conf_t *conf);
void prompts_destroy(prompts_t **self_p);

/* The methods (mcp.c's table). */
void prompts_list(call_t *c);
void prompts_get(call_t *c);
void completion_complete(call_t *c);

#endif
