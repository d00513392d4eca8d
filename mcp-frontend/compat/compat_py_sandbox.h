/* mcp-frontend/compat/compat_py_sandbox.h — the py-sandbox endpoint (compat.h): py-sandbox's one
 * tool, run_python, with the parameters of its execute() and its command line — code,
 * timeout (s, default 30, at most 60), memory (MB, 256, at most 1024), output_limit (bytes,
 * 65536, at most 262144), inspect_variables — clamped as that server clamps them, and its
 * ExecutionResult: {stdout, stderr, return_code, error, variables}. return_code is 0 when the
 * code ran to its end, 1 when it raised, -1 when the sandbox refused or stopped it (an import
 * outside the allowlist, a syntax error, a blocked operation, a limit); error says which.
 * Output past output_limit is cut there, as that server cut it, and `truncated` says so. */
#ifndef SP_FE_COMPAT_PY_SANDBOX_H
#define SP_FE_COMPAT_PY_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

extern const tool_t compat_py_sandbox_tools[];

#endif
