/* mcp-frontend/compat/compat_code_sandbox.h — the code-sandbox endpoint (compat.h): the tools of
 * the Python Code Sandbox, whose answers are JSON strings, and so are these:
 *
 *   check_syntax(code)  {"valid": true}, or {"valid": false, "error", "line", "offset",
 *       "context"}; the code is parsed in a sandboxed child (validate_code's job), never here
 *   test_code(code, timeout = 15.0, cpu_limit_sec = 10.0, memory_limit_mb = 100)
 *       {"stdout", "stderr", "exit_code", "phase": "execution", "platform_warning"}; a syntax
 *       error answers as check_syntax with "phase": "syntax_check", an import or operation the
 *       sandbox refuses {"valid": false, "phase": "security_check", "violations": [...]}, a
 *       timeout exit_code 124 — with the output printed before it, which that server lost.
 *
 * structuredContent carries the same object. */
#ifndef SP_FE_COMPAT_CODE_SANDBOX_H
#define SP_FE_COMPAT_CODE_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

extern const tool_t compat_code_sandbox_tools[];

#endif
