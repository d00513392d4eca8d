/* mcp-frontend/render/proftext.h — texts that name the sandbox profiles (tool descriptions, the
 * prompt, the server's instructions, errors), made from common/profiles.c's table so that no
 * text of the front-end can drift from what the executors enforce: a new profile appears in
 * all of them by being added to the table. A template names profiles through placeholders:
 *
 *   {default_profile}     the profile of a call that names none
 *   {profiles}            every profile, comma-separated
 *   {workspace_profiles}  those with a per-job workspace (the call's files)
 *   {figures_profiles}    those whose matplotlib figures come back as images
 *   {profile_summaries}   "name (default): summary. name: summary. ..." (no final stop)
 *   {default_timeouts}    the default profile's timeout, and the profiles that differ
 *
 * Anything else in braces is copied as it is ("{path: text}" in a description stays). */
#ifndef SP_FE_PROFTEXT_H
#define SP_FE_PROFTEXT_H
#include "common/buf.h"

void proftext_expand(buf_t *out, const char *template);
char *proftext(const char *template); /* the expansion, malloc'd */

#endif
