/* mcp-frontend/compat/compat_exec_sandbox.h — the exec-sandbox endpoint (compat.h): the tools of
 * mcp-python-exec-sandbox (seed 003), whose answers are text, and so are these:
 *
 *   execute_python(script, dependencies = [], timeout_seconds = 30, clamped to 1-300)
 *       "--- stdout ---\n...\n--- stderr ---\n...\n--- exit_code: N ---\n--- duration_ms: N ---"
 *       (and "--- timed_out: true ---"), each stream cut at 102400 bytes as that server cut it;
 *       structuredContent holds the same fields
 *   check_environment()  "Python version: ...\nPlatform: ...\n..." lines
 *   validate_script(script, dependencies = [])  "VALID\nrequires-python: ...\ndependencies (N):
 *       \n  - ..." or "INVALID: why"
 *
 * Dependencies are PEP 723's: `dependencies` is merged into the script's block as that server
 * merged it (pep723_merge.h), the script runs in the first profile the tenant may use that has
 * them all (jobargs.h), and the executor checks the versions. Nothing is installed — there is
 * no network — so a dependency no profile has ends the run with DependencyError, naming what is
 * installed; validate_script lists such dependencies as warnings. An uncaught exception's
 * traceback goes to stderr with exit code 1, as `python script.py` does. */
#ifndef SP_FE_COMPAT_EXEC_SANDBOX_H
#define SP_FE_COMPAT_EXEC_SANDBOX_H
#include "mcp-frontend/tools/tools.h"

extern const tool_t compat_exec_sandbox_tools[];

#endif
