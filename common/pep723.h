/* common/pep723.h — the dependencies of a PEP 723 `# /// script` block: their names, so
 * that a call without a `profile` runs in the first profile the tenant may use that has them
 * (jobargs.c), and the requirement strings, which go into the JobSpec for the node to resolve
 * what the profile lacks from its package source. The executor parses the block as TOML
 * again and checks versions. */
#ifndef SP_FE_PEP723_H
#define SP_FE_PEP723_H
#include <stddef.h>

#define PEP723_NAME 64
#define PEP723_REQ  201 /* a requirement string and its NUL (JOB_MAX_DEP) */

/* The distribution names in `dependencies`, normalised (lowercase, runs of -_. as one '-'),
 * at most max of them. The count; -1 when the code has no `# /// script` block. */
int pep723_dependencies(const char *code, size_t len, char names[][PEP723_NAME], int max);
/* The requirement strings as written ("numpy>=1.20"), same count and order. */
int pep723_requirements(const char *code, size_t len, char reqs[][PEP723_REQ], int max);

#endif
