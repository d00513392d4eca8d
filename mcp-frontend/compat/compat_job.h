/* mcp-frontend/compat/compat_job.h — what the drop-in endpoints' tools (compat.h) share: running a
 * job on the farm from arguments translated into execute_code's names, and shaping answers the
 * way the servers they stand in for did.
 *
 * A compat handler reads its own server's parameters, writes them into an object under the
 * names jobargs.h reads (code, timeout, memory_limit, output_limit, profile, allowed_imports,
 * inspect_variables, stdin, capture_output, dependencies) and hands it to compat_job_run, so that
 * limits, profiles and the tenant's caps are checked exactly as on /mcp. The result comes back
 * through the handler's render function together with a context it chose (its own arguments, say),
 * because old servers' answers repeat what was asked ("timed out after 15.0 seconds"). */
#ifndef SP_FE_COMPAT_JOB_H
#define SP_FE_COMPAT_JOB_H
#include <jansson.h>

#include "proto/job.h"
#include "proto/result.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/tools/tools.h"

typedef struct {
    const char *tool;                  /* for records, logs and metrics */
    job_kind_t kind;                   /* JOB_EXEC, or JOB_VALIDATE (validate.py's analysis) */
    int record;                        /* an execution of the user's code: recorded */
    long cpu_ms;                       /* > 0: a CPU budget below the wall clock */
    int narrow_imports;                /* the server refused os, sys, subprocess… at import:
                                          without allowed_imports, the job's are narrowed to
                                          what the code imports of the rest (compat_job.c) */
    execution_render_with_fn *render;  /* the CallToolResult, from the Result and ctx */
    json_t *ctx;                       /* borrowed; the execution keeps its own reference */
    const char *session;               /* a live sandbox session of the tenant's: the job is its
                                          next cell (args' profile must be the session's) */
    int dependencies;                  /* args' dependencies and the code's PEP 723 block go to
                                          the node to resolve, as execute_code's do */
} compat_job_t;

/* Checks args as execute_code's would be and starts the job; c is answered exactly once. */
void compat_job_run(call_t *c, json_t *args, const compat_job_t *job);

/* The farm could not run the job at all (rejected, lost, cancelled, an internal error):
 * no old server had such an answer, so compat tools report these with isError. */
int compat_farm_failed(const result_t *res);
/* "ZeroDivisionError: division by zero", or the status's name when there is no error. */
void compat_error_line(buf_t *b, const result_t *res);
/* What Python prints on stderr when a script dies of an exception: the traceback, else the
 * error line; appended after what the code itself wrote to stderr. */
void compat_python_stderr(buf_t *b, const result_t *res);

/* The import the sandbox refused (an uncaught ImportError of its own: "import of 'os' is not
 * allowed ..."): 1 with the module's name in module, else 0. */
int compat_refused_import(const result_t *res, char *module, size_t cap);
/* What the old servers refused before running the code, and the sandbox here when it is
 * attempted: an import outside the profile, an operation the sandbox does not allow (files
 * outside the workspace, processes, the network), left uncaught, or a security stop. */
int compat_refused(const result_t *res);

/* What a server replaced refused by reading code before running it (its AST checks). snakepit
 * does not need them — the sandbox confines what such code reaches — but these endpoints give
 * the answers those servers' clients were written against. */
typedef struct {
    const char *const *modules; /* imports refused (a module or any of its submodules) */
    const char *const *calls;   /* names refused as calls, `eval(...)` */
    int dunders;                /* every double-underscore attribute refused, `x.__class__` */
} compat_rules_t;

typedef enum { COMPAT_IMPORT, COMPAT_CALL, COMPAT_DUNDER } compat_use_t;

/* fn for each use of code that rules refuse (imports, then calls, then attributes, each in
 * order of appearance); the count. */
size_t compat_refusals(const char *code, size_t len, const compat_rules_t *rules,
                       void (*fn)(void *arg, compat_use_t use, const char *name), void *arg);

/* The exit status a Python process would have had: 0, 1 when it raised (or was refused),
 * minus the signal when a limit killed it (-9 for the wall clock). */
int compat_exit_code(const result_t *res);

/* validate.py's analysis of a JOB_VALIDATE (an object), or NULL when the job did not give one. */
json_t *compat_validation(const result_t *res);

/* The final values of inspect_variables, as an object (empty when none came back). */
json_t *compat_variables(const result_t *res);

/* A CallToolResult whose text is doc as JSON (indented as the FastMCP servers wrote it) and
 * whose structuredContent is doc (stolen). */
json_t *compat_json_result(json_t *doc, int is_error);
/* A tool that could not do its work: isError with {"success": false, "error": why}. */
void compat_failed(call_t *c, const char *why);

/* An integer argument clamped to [lo, hi] (the old servers clamp rather than refuse), or dflt
 * when absent or null. */
double compat_clamp(json_t *args, const char *name, double dflt, double lo, double hi);

#endif
