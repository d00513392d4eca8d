/* mcp-frontend/tools/sessiondefs.h — the session tools' rows (tools.h), added after tooldefs.c's.
 */
#ifndef SP_FE_SESSIONDEFS_H
#define SP_FE_SESSIONDEFS_H
#include "tools.h"

extern const tool_t sessiondefs[];

#endif
