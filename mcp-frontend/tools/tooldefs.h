/* mcp-frontend/tools/tooldefs.h — snakepit's tools, one row each (tools.h says what a row holds).
 */
#ifndef SP_FE_TOOLDEFS_H
#define SP_FE_TOOLDEFS_H
#include "tools.h"

extern const tool_t tooldefs[]; /* in tools/list order, ended by {NULL} */

#endif
