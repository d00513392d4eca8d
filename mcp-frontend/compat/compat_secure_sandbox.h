/* mcp-frontend/compat/compat_secure_sandbox.h — the secure-sandbox endpoint (compat.h): the tools
 * of mcp-secure-sandbox with their parameters:
 *
 *   run_sandbox_code(code, timeout_sec)  runs code in the tenant's persistent workspace:
 *                         {success, stdout, stderr, exit_code, execution_time, error,
 *                         files_written}
 *   validate_json_data, validate_csv_data   compat_validators.h
 *   create/restore/list/delete_state_snapshot   compat_snapshots.h
 *   get_sandbox_metrics   the caller's own usage today and limits, from the records in Redis
 *                         (never the process's or other tenants' figures)
 *
 * That server keeps one workspace between calls: here a sandbox session per tenant
 * (compat_snapshots.h), and the files a call wrote are listed in files_written. */
#ifndef SP_FE_COMPAT_SECURE_SANDBOX_H
#define SP_FE_COMPAT_SECURE_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

#define SECURE_TIMEOUT_S     30  /* run_sandbox_code's timeout_sec: the default */
#define SECURE_MAX_TIMEOUT_S 300 /* and the most */

extern const tool_t compat_secure_sandbox_tools[];
/* What run_sandbox_code refuses before running (as that server's AST checker did): imports of
 * these modules, calls of these names, any double-underscore attribute. */
extern const char *const compat_secure_refused_modules[];
extern const char *const compat_secure_refused_calls[];

#endif
