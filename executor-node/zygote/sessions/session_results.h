/* executor-node/zygote/sessions/session_results.h — what the zygote adds to a session's snapshot
 * and summary answers: the workspace's files, which are never the hostile process's word (its
 * process gives its variables, session.py). ws: the profile's workspaces, NULL without one. */
#ifndef SP_SESSION_RESULTS_H
#define SP_SESSION_RESULTS_H

#include "proto/result.h"
#include "executor-node/sandbox/workspace.h"
#include "zygote_session.h"

/* A snapshot's answer: the process's pickles (checked again) and the workspace's files, as one
 * snapshot (proto/snapshot.h); an error answer when either cannot be had. */
void session_snapshot_result(const workspace_t *ws, zygote_session_t *z, result_t *res);
/* An info answer: {"files": [...], "session": <what the process said>}. */
void session_info_result(const workspace_t *ws, zygote_session_t *z, result_t *res);

#endif
