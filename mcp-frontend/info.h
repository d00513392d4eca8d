/* mcp-frontend/info.h — what the sandbox offers (get_sandbox_info, sandbox://info). */
#ifndef SP_FE_INFO_H
#define SP_FE_INFO_H
#include <jansson.h>

#include "fe.h"
#include "tenants.h"

json_t *info_json(fe_t *fe, const tenant_t *t);

#endif
