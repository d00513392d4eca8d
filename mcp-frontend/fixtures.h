/* mcp-frontend/fixtures.h — the conformance suite's fixtures (--test-fixtures only). */
#ifndef SP_FE_FIXTURES_H
#define SP_FE_FIXTURES_H
#include <jansson.h>

#include "tools.h"

extern const tool_t fixtures_tools[]; /* the test_* tools, ended by {NULL} */

json_t *fixtures_resources(void);
json_t *fixtures_resource_templates(void);
json_t *fixtures_read(const char *uri); /* a ReadResourceResult, or NULL when not ours */
int fixtures_subscribable(const char *uri);
json_t *fixtures_prompts(void);
json_t *fixtures_prompt_get(const char *name, const json_t *args); /* NULL when unknown */
json_t *fixtures_complete(const char *ref_name, const char *arg,
                          const char *value); /* values, or NULL */

#endif
