/* mcp-frontend/compat/pep723_merge.h — a script's PEP 723 metadata with extra dependencies merged
 * in, for the exec-sandbox endpoint's `dependencies` argument (compat_exec_sandbox.c). The merge
 * is mcp-python-exec-sandbox's: the script's dependencies, then the extras, an extra replacing a
 * script dependency of the same normalised name.
 *
 * The script's own block stays where it is and as it is, so that the executor reads exactly the
 * TOML the user wrote (tomllib: every syntax error, duplicate key and wrong type is found there,
 * as uv would find it), and every line keeps its number: an extra that replaces a dependency is
 * written over that dependency's string, on its line; the other extras go to the executor as
 * the job's `dependencies`, beside the block's, the way execute_code's argument does
 * (jobargs.h), so the node resolves them from the operator's package source alike.
 *
 * Read here, before anything runs: the block's shape as PEP 723 defines it (a `# /// script`
 * line, lines that are `#` alone or `# ` and text, a `# ///` line; one such block), and of its
 * TOML just its top-level `dependencies` array and `requires-python`, each string kept exactly
 * as written (quotes and escapes included). Everything is bounded by the script's length. */
#ifndef SP_FE_PEP723_MERGE_H
#define SP_FE_PEP723_MERGE_H
#include <stddef.h>

#define PEP723_MAX_DEPS     64
#define PEP723_MAX_SPEC  256 /* bytes of one dependency string read, quotes included */
#define PEP723_MAX_EXTRA 200 /* bytes of one extra dependency specifier */
#define PEP723_NOT_IN_BLOCK ((size_t)-1)

typedef struct {
    int found;                   /* the script has a `# /// script` block */
    size_t open_at, open_len;    /* its opening line, as byte offset and length */
    size_t close_end;            /* just past its closing line (and that line's newline) */
    char *deps[PEP723_MAX_DEPS]; /* TOML strings, quotes included: the block's, then extras */
    size_t dep_at[PEP723_MAX_DEPS];  /* where the block has it in the code, or NOT_IN_BLOCK */
    size_t dep_len[PEP723_MAX_DEPS]; /* its length there (before any replacement) */
    size_t n_deps;
    char *requires_python; /* TOML string as written, or NULL */
} pep723_meta_t;

/* Reads code's block (none: found = 0, which is fine). 0, or -1 with the reason in err when the
 * block is malformed: not closed, a line that is not a comment of the block's form, a second
 * block, or dependencies that cannot be read. */
int pep723_read(const char *code, size_t len, pep723_meta_t *m, char *err, size_t errlen);
/* Adds an extra dependency specifier (PEP 508, printable ASCII): 0, or -1 with the reason. */
int pep723_add(pep723_meta_t *m, const char *spec, size_t len, char *err, size_t errlen);
/* The script with the replaced dependencies written in place (malloc'd, length in *out_len). */
char *pep723_write(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len);
/* The block's lines alone, replacements made (a script that only declares; malloc'd). NULL
 * when the script has no block. */
char *pep723_block(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len);
/* A TOML string token's text, for a listing or a PEP 508 check: the quotes dropped and, in a
 * basic string, \" and \\ unescaped (other escapes are left as written). Into out, cut to cap. */
void pep723_unquote(const char *tok, char *out, size_t cap);
void pep723_meta_clear(pep723_meta_t *m);

#endif
