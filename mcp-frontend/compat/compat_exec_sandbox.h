/* mcp-frontend/compat/compat_exec_sandbox.h — the exec-sandbox endpoint (compat.h): the tools of
 * mcp-python-exec-sandbox, whose answers are text, and so are these:
 *
 *   execute_python(script, dependencies = [], timeout_seconds = 30, clamped to 1-300)
 *       "--- stdout ---\n...\n--- stderr ---\n...\n--- exit_code: N ---\n--- duration_ms: N ---"
 *       (and "--- timed_out: true ---"), each stream cut at 102400 bytes as that server cut it;
 *       structuredContent holds the same fields
 *   check_environment()  "Python version: ...\nPlatform: ...\n..." lines
 *   validate_script(script, dependencies = [])  "VALID\nrequires-python: ...\ndependencies (N):
 *       \n  - ..." or "INVALID: why"
 *
 * Dependencies take execute_code's path: `dependencies` is merged into the script's own block
 * as that server merged it (pep723_merge.h), and the block's and the argument's requirements go
 * to the node, which resolves what the profile lacks from the operator's package source (none:
 * the run ends with DependencyError naming what is installed; validate_script lists such
 * dependencies as warnings). The script runs in a directory it may write — the first profile
 * with a workspace that the tenant may use and that has what some profile has — as it ran in a
 * temporary directory there. validate_script runs the script's block alone, so the executor
 * reads its TOML as it would before running the script: a malformed block (bad TOML, the wrong
 * types, not closed, two blocks, a dependency that is no PEP 508 requirement) is INVALID, and
 * execute_python does not run it. An uncaught exception's traceback goes to stderr with exit
 * code 1, as `python script.py` does. */
#ifndef SP_FE_COMPAT_EXEC_SANDBOX_H
#define SP_FE_COMPAT_EXEC_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

extern const tool_t compat_exec_sandbox_tools[];

#endif
