/* mcp-frontend/compat/compat_python_sandbox.h — the python-sandbox endpoint (compat.h): the tools
 * of the Python Sandbox Server (RestrictedPython, optional gVisor), execute_code,
 * validate_code and get_sandbox_info, with its parameters, defaults and answers:
 *
 *   execute_code  {success, execution_id, result, stdout, stderr, execution_time, variables}
 *                 on failure {success: false, error, traceback, ...}; timeout {error:
 *                 "Execution timeout", timeout}; a refused import {security_event:
 *                 "blocked_import"} — and, unlike that server, output printed before a
 *                 timeout or an error is kept
 *   validate_code {validation {valid, errors, message}, analysis {line_count,
 *                 character_count, estimated_complexity}, recommendations}
 *   get_sandbox_info {success, security_profiles {basic, data_science, network, filesystem},
 *                 resource_limits, container_mode}
 *
 * `variables` lists the names the code bound (pyscan.h finds candidates, the sandbox says which
 * exist at the end); `result` is the final value of `result` (or `output`), else the last
 * expression's. Code runs in the first profile the tenant may use whose modules cover its
 * imports and allowed_imports, so that server's numpy example lands in python.data_science. */
#ifndef SP_FE_COMPAT_PYTHON_SANDBOX_H
#define SP_FE_COMPAT_PYTHON_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

extern const tool_t compat_python_sandbox_tools[];

#endif
