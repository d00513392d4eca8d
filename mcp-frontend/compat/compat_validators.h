/* mcp-frontend/compat/compat_validators.h — validate_json_data and validate_csv_data of the
 * secure-sandbox endpoint (compat_secure_sandbox.c holds their rows). The validators are
 * Python programs (helpers/schema_check.py: JSON Schema draft 7 with the predefined schemas
 * config, user and dataset of helpers/schemas.json; helpers/csv_check.py), compiled into this
 * binary and run on the farm as jobs in the default profile, the call's data on their stdin:
 * schemas, patterns and CSV come from the network, and whatever they cost (a backtracking
 * pattern, a $ref that loops, nesting a thousand deep) is one sandboxed job's time, never the
 * front-end's loop. Nothing is recorded: these are not executions of the caller's code. */
#ifndef SP_FE_COMPAT_VALIDATORS_H
#define SP_FE_COMPAT_VALIDATORS_H
#include "mcp-frontend/tools/tools.h"

/* The predefined schemas (helpers/schemas.json) as {name: schema}: what the schema validator
 * gets with every call and the resource sandbox://schemas shows. Borrowed, never changes. */
json_t *compat_schemas(void);

void compat_validate_json_data(call_t *c, json_t *args, const tool_task_t *task);
void compat_validate_csv_data(call_t *c, json_t *args, const tool_task_t *task);

#endif
