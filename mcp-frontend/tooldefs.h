/* mcp-frontend/tooldefs.h — the tools' published definitions (see tooldefs.c). */
#ifndef SP_FE_TOOLDEFS_H
#define SP_FE_TOOLDEFS_H
#include <jansson.h>
#include <stdio.h>

json_t *tooldefs_load(void);  /* a new array of Tool objects */
json_t *fixtures_tools(void); /* the conformance suite's test_* tools (fixtures.c) */

#endif
