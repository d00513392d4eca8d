/* mcp-frontend/mcp/fixtures.h — the conformance suite's fixtures (--test-fixtures only). */
#ifndef SP_FE_FIXTURES_H
#define SP_FE_FIXTURES_H
#include <jansson.h>

#include "mcp-frontend/tools/tools.h"

extern const tool_t fixtures_tools[]; /* the test_* tools, ended by {NULL} */
/* fixtures_modern.c: the 2026-07-28 scenarios' tools, and their multi round-trip prompt */
extern const tool_t fixtures_modern_tools[];
json_t *fixtures_modern_prompts(void);
/* 1 when name is that prompt (c is answered, at once), else 0. */
int fixtures_modern_prompt(call_t *c, const char *name);

json_t *fixtures_resources(void);
json_t *fixtures_resource_templates(void);
json_t *fixtures_read(const char *uri); /* a ReadResourceResult, or NULL when not ours */
int fixtures_subscribable(const char *uri);
json_t *fixtures_prompts(void);
json_t *fixtures_prompt_get(const char *name, const json_t *args); /* NULL when unknown */
json_t *fixtures_complete(const char *ref_name, const char *arg,
                          const char *value); /* values, or NULL */

#endif
