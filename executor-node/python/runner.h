/* executor-node/python/runner.h — the C half of runner.py: the _snakepit builtin module, through
 * which the runner writes into the child's job area. write() puts output into shared memory as it
 * is printed (so a job killed for time or memory still returns it, and the zygote streams it) and
 * ends the job at its output cap; started() and stopped() time the user's code; traceback()
 * reads frames in C, so the runner never touches tb_frame from Python (the audit hook blocks
 * that); finish() packs the runner's findings into the meta (outcome.h reads it). */
#ifndef SP_RUNNER_H
#define SP_RUNNER_H

#include "executor-node/area/jobarea.h"

typedef struct _object PyObject;

/* Zygote, before the interpreter starts: makes _snakepit importable. 0, or -1. */
int runner_register(void);
/* Child, at its job: where _snakepit writes (NULL: nowhere, as in the zygote's probe). */
void runner_bind(area_t *area);
/* A session's process: output past the cap ends the cell (_snakepit.OutputLimit), not the
 * process. */
void runner_session(int on);

#endif
