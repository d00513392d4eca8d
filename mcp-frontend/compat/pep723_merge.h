/* mcp-frontend/compat/pep723_merge.h — a script's PEP 723 metadata with extra dependencies merged
 * in, for the exec-sandbox endpoint's `dependencies` argument (compat_exec_sandbox.c). The merge
 * follows mcp-python-exec-sandbox's: the script's dependencies, then the extras, an extra
 * replacing a script dependency of the same normalised name. Where that server rewrote the
 * block at the top of the script (and so moved every line of code), this keeps each line where
 * it was: the original opening line is renamed, so that block stays an inert comment, and the
 * merged block goes at the end (PEP 723 allows it anywhere). The executor then reads it as it
 * reads any script's (runner.py: TOML, versions against the profile's packages).
 *
 * Read from the block: its top-level `dependencies` array and `requires-python`, each string
 * kept exactly as written (quotes and escapes included, so TOML reads it as before); other keys
 * and tables matter to no sandbox here and are left out of the merged block. */
#ifndef SP_FE_PEP723_MERGE_H
#define SP_FE_PEP723_MERGE_H
#include <stddef.h>

#define PEP723_MAX_DEPS 64
#define PEP723_MAX_SPEC  256 /* bytes of one dependency string read, quotes included */
#define PEP723_MAX_EXTRA 200 /* bytes of one extra dependency specifier */

typedef struct {
    int found;                   /* the script has a `# /// script` block */
    size_t open_at, open_len;    /* its opening line, as byte offset and length */
    char *deps[PEP723_MAX_DEPS]; /* TOML strings as written, quotes included */
    size_t n_deps;
    char *requires_python; /* TOML string as written, or NULL */
} pep723_meta_t;

/* Reads code's block (none: found = 0, which is fine). 0, or -1 with the reason in err when
 * the block's dependencies cannot be read (then the executor could not read them either). */
int pep723_read(const char *code, size_t len, pep723_meta_t *m, char *err, size_t errlen);
/* Adds an extra dependency specifier (PEP 508, printable ASCII): 0, or -1 with the reason. */
int pep723_add(pep723_meta_t *m, const char *spec, size_t len, char *err, size_t errlen);
/* The script with m's block as described above (malloc'd, length in *out_len). */
char *pep723_write(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len);
/* The merged block alone (a script that only declares), malloc'd. */
char *pep723_block(const pep723_meta_t *m);
void pep723_meta_clear(pep723_meta_t *m);

#endif
