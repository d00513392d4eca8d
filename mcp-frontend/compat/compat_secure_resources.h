/* mcp-frontend/compat/compat_secure_resources.h — the resources and prompts of the secure-sandbox
 * endpoint (compat.h), the one server replaced that declared more than tools:
 *
 *   sandbox://status   the endpoint's configuration, the tenant's workspace and how many
 *                      snapshots it keeps (JSON)
 *   sandbox://logs     the tenant's last 100 executions as traces: time, level, message,
 *                      duration (JSON; from the records, never the process's memory, so every
 *                      front-end shows the same and no tenant sees another's)
 *   sandbox://schemas  the predefined validation schemas config, user and dataset (JSON)
 *
 *   generate_secure_script     asks the model for a script that keeps to the workspace's rules
 *   diagnose_validation_error  asks the model to explain validation errors and correct the data
 *
 * The prompts' arguments are all optional (a missing one is described as such in the text), and
 * arguments they do not know are ignored, as a client written against the replaced server may
 * name them differently. */
#ifndef SP_FE_COMPAT_SECURE_RESOURCES_H
#define SP_FE_COMPAT_SECURE_RESOURCES_H
#include "mcp-frontend/rpc/endpoint.h"

extern const endpoint_resource_t compat_secure_sandbox_resources[];
extern const endpoint_prompt_t compat_secure_sandbox_prompts[];

#endif
