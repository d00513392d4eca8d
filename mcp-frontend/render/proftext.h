/* mcp-frontend/render/proftext.h — texts that name the sandbox profiles (tool descriptions, the
 * prompt, the server's instructions, errors), made from common/profiles.c's table so that no
 * text of the front-end can drift from what the executors enforce: a new profile appears in
 * all of them by being added to the table. A template names profiles through placeholders:
 *
 *   {default_profile}     where code that names no profile and imports only the standard
 *                         library runs: the first profile served
 *   {profiles}            every profile, comma-separated
 *   {workspace_profiles}  those with a per-job workspace (the call's files)
 *   {figures_profiles}    those whose matplotlib figures come back as images
 *   {profile_summaries}   "name (default): summary. name: summary. ..." (no final stop)
 *   {default_timeouts}    the default profile's timeout, and the profiles that differ
 *
 * Anything else in braces is copied as it is ("{path: text}" in a description stays).
 *
 * Only the profiles the farm serves are named (a text that offered a profile no executor runs
 * would send the model to a call that cannot succeed). farm/served.h finds which they are and
 * sets them here; until it knows — Redis not read yet, or no executor reporting at all — every
 * profile of the table is named. A placeholder whose list is empty says "none on this farm". */
#ifndef SP_FE_PROFTEXT_H
#define SP_FE_PROFTEXT_H
#include <stdint.h>

#include "common/buf.h"
#include "common/profiles.h"

void proftext_expand(buf_t *out, const char *template);
char *proftext(const char *template); /* the expansion, malloc'd */

/* The profiles served now: bit i for profiles[i]; 0 when not known (every profile named). */
void proftext_serve(uint32_t mask);
uint32_t proftext_served(void);
/* 1 when p is served, or when what is served is not known. */
int proftext_is_served(const profile_t *p);
/* The profile a call that imports nothing beyond the standard library runs in: the first
 * served one of the table. */
const profile_t *proftext_default(void);
/* The names of the served profiles that keep() accepts (all when NULL), joined by sep into
 * out (cut short when it is too small); "none on this farm" when there is none. */
void proftext_join(char *out, size_t outlen, const char *sep, int (*keep)(const profile_t *));
/* Changes whenever the served set does: texts made from these and kept (tool definitions) are
 * made again when it differs from theirs. */
unsigned proftext_generation(void);

#endif
