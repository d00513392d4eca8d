/* mcp-frontend/tools/session_ops.h — what the session tools (session_tools.c, snapshot_tools.c) and
 * the sandbox://sessions resource share: one op per call, holding the call, the JobSpec being
 * built and the session it is about, through the asynchronous steps of a tool (its record,
 * its quota, its job on the farm); the answers they give when something is missing; and the
 * lookup of the session a call names. */
#ifndef SP_FE_SESSION_OPS_H
#define SP_FE_SESSION_OPS_H
#include <jansson.h>

#include "common/buf.h"
#include "proto/job.h"
#include "proto/result.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/rpc/call.h"

typedef struct op op_t;
typedef void(op_step_fn)(op_t *op, const session_record_t *s);

struct op {
    call_t *call; /* held while the op lives */
    jobspec_t spec;
    session_record_t s; /* the session the op makes (create, fork, restore) or acts on */
    void *extra;        /* the tool's own */
    op_step_fn *step;   /* sop_with_session's: taken again once a hibernated session resumed */
    int resumed;        /* it was, once (no second time) */
    int as_is;          /* a hibernated session is not resumed for it (close_session) */
};

op_t *sop_op(call_t *c);
void sop_op_free(op_t *op); /* releases the call; frees extra too */

/* A job of this kind on session s (the op's spec: kind, service, session), then fn. */
void sop_submit_on(op_t *op, const session_record_t *s, job_kind_t kind, session_job_fn *fn);
/* One item of a listing as a line of its text. */
typedef void(sop_line_fn)(buf_t *b, const json_t *item);
/* The answer of a listing tool: {key: items} (NULL items: the store was unreachable); its text
 * says how many `noun`s, one line each (line), at most SOP_LINES of them, and next: what to
 * do with them. Releases the call. */
#define SOP_LINES 50
void sop_reply_list(call_t *c, json_t *items, const char *key, const char *noun, const char *store,
                    sop_line_fn *line, const char *next);

/* Answers the call with an error result (isError, text only). */
void sop_fail(call_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ... with what the farm said. */
void sop_fail_result(call_t *c, const char *what, const result_t *res);

/* The new session's record (op->s: its id and profile set), from the farm's answer. */
void sop_record(op_t *op, const result_t *res, const char *parent, const char *restored);
/* Answers c with result (stolen) once the session's record as it stands has reached Redis
 * (session_records_landed): the client's next call may reach another front-end. */
void sop_reply_landed(call_t *c, json_t *result);
/* The answer of a tool that made a session: its id, profile, limits, expiry, forks left;
 * sent as sop_reply_landed sends. */
void sop_reply_session(call_t *c, const session_record_t *s, const char *verb, long forks_left);

/* fork_session's answer: sop_reply_session's for the first clone, and session_ids (stolen: every
 * clone's id, in order). */
void sop_reply_forked(call_t *c, const session_record_t *s, long forks_left, json_t *session_ids);
/* The call's session_id, canonical; an argument error and -1 when it is not a session id. */
int sop_session_arg(call_t *c, json_t *args, char out[ID_STR_LEN + 1]);
/* The farm no longer holds op->s: the call is answered with why (and the op freed). */
void sop_gone(op_t *op, const result_t *res);

/* The session the call names (this front-end's cache, else its record), then step with it;
 * one that does not exist, is another tenant's, or ended is answered here; one its node
 * hibernated is resumed first (mcp-frontend/cells/resume.h), and so is one the farm turns out to
 * have freed (sop_gone): then step runs again, its spec cleared. extra becomes the op's (freed
 * with it, also when the call is answered here). as_is: a hibernated session is given to step
 * as it is (close_session ends it without waking it). */
void sop_with_session(call_t *c, json_t *args, op_step_fn *step, void *extra);
void sop_with_session_as_is(call_t *c, json_t *args, op_step_fn *step, void *extra);

#endif
