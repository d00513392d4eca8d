/* mcp-frontend/tools/pyscan.h — the names a piece of Python binds and the modules it imports,
 * read lexically, without a Python parser in this process. A call that names no profile runs
 * in the smallest profile whose modules cover the imports found here (jobargs.h); the
 * python-sandbox endpoint reports which variables code defined (its `variables` list) by
 * asking the sandbox for the final values of these names. The names it calls and the
 * double-underscore attributes it reads are what the servers behind three drop-in endpoints
 * refused by inspecting code (compat_job.h's compat_static_refusal): the same reading, not a
 * defence — the sandbox is that.
 *
 * A lexical reading errs both ways, and the way it is used makes that harmless: a name found
 * that the code never bound (a local of a function, a word in a docstring) is simply absent
 * from the sandbox's answer; a binding it misses (exec, globals()[...]) is not reported.
 * Bindings read: assignments (also chained, tuple, annotated and augmented ones), for and
 * with ... as targets, walrus, def, class and import. Linear in the input, bounded output. */
#ifndef SP_FE_PYSCAN_H
#define SP_FE_PYSCAN_H
#include <stddef.h>

#define PYSCAN_MAX  64  /* names and modules kept, each (first seen first) */
#define PYSCAN_NAME 128 /* longer identifiers are skipped */

typedef struct {
    char names[PYSCAN_MAX][PYSCAN_NAME]; /* identifiers bound, unique, in order of appearance */
    size_t n_names;
    char modules[PYSCAN_MAX][PYSCAN_NAME]; /* absolute imports (dotted), unique */
    size_t n_modules;
    char calls[PYSCAN_MAX][PYSCAN_NAME]; /* names called as such, `f(...)` (not `x.f(...)`) */
    size_t n_calls;
    char dunders[PYSCAN_MAX][PYSCAN_NAME]; /* double-underscore attributes read, `x.__class__` */
    size_t n_dunders;
} pyscan_t;

void pyscan(const char *code, size_t len, pyscan_t *out);

#endif
