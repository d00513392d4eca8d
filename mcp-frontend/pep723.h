/* mcp-frontend/pep723.h — the dependency names of a PEP 723 `# /// script` block, so that a
 * call without a `profile` can run in the first profile the tenant may use that has them all
 * (jobargs.c). Only routing: the executor parses the block as TOML and checks versions. */
#ifndef SP_FE_PEP723_H
#define SP_FE_PEP723_H
#include <stddef.h>

#define PEP723_NAME 64

/* The distribution names in `dependencies`, normalised (lowercase, runs of -_. as one '-'),
 * at most max of them. The count; -1 when the code has no `# /// script` block. */
int pep723_dependencies(const char *code, size_t len, char names[][PEP723_NAME], int max);

#endif
