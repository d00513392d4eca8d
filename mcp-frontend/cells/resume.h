/* mcp-frontend/cells/resume.h — a session brought back from its latest checkpoint, under its own
 * id, on whichever executor the broker picks: when its node freed it (hibernated: idle past its
 * timeout, memory pressure, a drain; executor-node/node/hibernate.h) or went away (lost) after
 * checkpointing it. The caller (a cell, a session tool) then goes on as if nothing had
 * happened, and tells its client what the resume note says: which cell the checkpoint followed,
 * why the session had been freed, and what could not be brought back.
 *
 * One front-end at a time resumes a session (session_records_claim); another one that finds
 * it being resumed hears so (RESUME_BUSY) and tries its call again shortly. The restore is a
 * session_restore into a new session with the same id (its JobSpec's resume_cells numbers the
 * cells on). Nothing here is kept between calls. */
#ifndef SP_FE_RESUME_H
#define SP_FE_RESUME_H
#include <jansson.h>
#include <stdint.h>

#include "mcp-frontend/rpc/call.h"
#include "session_records.h"

typedef enum {
    RESUME_OK = 1,
    RESUME_NONE = 0,  /* nothing to resume from (no checkpoint, expired, ended): why says */
    RESUME_BUSY = 2,  /* another front-end is resuming it: try the call again shortly */
    RESUME_FAILED = 3 /* the restore did not work: why says */
} resume_status_t;

typedef struct {
    uint32_t from_cell;     /* the checkpoint followed this cell */
    char reason[256];       /* why the session had been freed */
    uint64_t checkpoint_ms; /* when the checkpoint was taken */
    json_t *not_restored;   /* [{name, reason}]: left out of the checkpoint, or failed to restore */
} resume_note_t;

/* note: valid during the call (RESUME_OK only). */
typedef void(resume_fn)(void *arg, resume_status_t st, const resume_note_t *note, const char *why);

/* Resumes session id (its record s, as last read) for the call's tenant. lost: its node went
 * away (else it was freed, hibernated); reason: what the farm said. c is held meanwhile. */
void session_resume(call_t *c, const session_record_t *s, int lost, const char *reason,
                    resume_fn *fn, void *arg);

/* The farm's answer says the session was freed hibernated, or lost with its node. */
int session_resume_hibernated(const char *end_reason);

/* The note as the answer carries it (a new object): {from_cell, reason, checkpointed_at,
 * not_restored}; and as a sentence into text (cap bytes). */
json_t *session_resume_json(const resume_note_t *note);
void session_resume_text(const resume_note_t *note, char *text, size_t cap);

#endif
