/* mcp-frontend/info.h — what the sandbox offers (get_sandbox_info, sandbox://info). */
#ifndef SP_FE_INFO_H
#define SP_FE_INFO_H
#include <jansson.h>

#include "fe.h"
#include "call.h"
#include "tenants.h"

json_t *info_json(fe_t *fe, const tenant_t *t);
/* Answers c with the info plus what Redis knows (the broker's capacity snapshot, sp:profiles'
 * package versions): as a resources/read of sandbox://info when resource, else as the
 * get_sandbox_info tool's result. */
void    info_request(call_t *c, int resource);

#endif
