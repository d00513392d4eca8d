/* executor-node/zygote/sessions/session_results.c — see session_results.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/snapshot.h"
#include "session_files.h"
#include "session_results.h"

/* The session's pickles (its process's part, checked again here) and its workspace's files,
 * as one snapshot (proto/snapshot.h). */
void session_snapshot_result(const workspace_t *ws, zygote_session_t *z, result_t *res)
{
    snapshot_view_t parts;
    files_read_t files = {0};
    char err[256];
    int rc = res->snapshot
                 ? snapshot_decode(res->snapshot, res->snapshot_len, &parts, err, sizeof err)
                 : (snprintf(err, sizeof err, "no snapshot came back"), -1);
    if (rc == 0 && ws && session_files_read(z->cwd, &files, err, sizeof err) < 0) {
        snapshot_view_free(&parts);
        rc = -1;
    }
    if (rc < 0) {
        res->status = ST_ERROR;
        res->error.present = 1;
        free(res->error.type);
        free(res->error.message);
        res->error.type = xstrdup("SnapshotFailed");
        res->error.message = xstrdup(err);
    } else {
        const char **names = xcalloc(files.n_skipped + 1, sizeof *names);
        const char **reasons = xcalloc(files.n_skipped + 1, sizeof *reasons);
        for (size_t i = 0; i < files.n_skipped; i++)
            names[i] = files.skipped[i].name, reasons[i] = files.skipped[i].reason;
        buf_t out;
        buf_init(&out);
        snapshot_encode(&parts, files.files, files.n, names, reasons, files.n_skipped, &out);
        free(names);
        free(reasons);
        snapshot_view_free(&parts);
        explicit_bzero(res->snapshot, res->snapshot_len);
        free(res->snapshot);
        res->snapshot = buf_steal(&out, &res->snapshot_len);
        session_files_free(&files);
        return;
    }
    if (res->snapshot) explicit_bzero(res->snapshot, res->snapshot_len);
    free(res->snapshot);
    res->snapshot = NULL;
    res->snapshot_len = 0;
}

/* {"files": [...], "session": <what the session's process said>}: the files are listed here,
 * where they are not the hostile process's word. */
void session_info_result(const workspace_t *ws, zygote_session_t *z, result_t *res)
{
    buf_t b;
    buf_init(&b);
    buf_puts(&b, "{\"files\":");
    if (ws)
        session_files_list(z->cwd, &b);
    else
        buf_puts(&b, "[]");
    buf_printf(&b, ",\"session\":%s}", res->session.summary ? res->session.summary : "null");
    free(res->session.summary);
    res->session.summary = buf_steal(&b, NULL);
}
