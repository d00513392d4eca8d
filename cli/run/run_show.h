/* cli/run/run_show.h — how `snakepit run` shows what a run did: the output as the code wrote it,
 * then the result and the variables asked for (or the whole structured result with --json),
 * a one-line reason for every status but ok that is never empty, the figures and files saved
 * under --out (or a note that there are some), and the exit status. */
#ifndef SP_RUN_SHOW_H
#define SP_RUN_SHOW_H
#include <jansson.h>

#include "run_args.h"
#include "runfiles.h"

/* structured: execute_code's structuredContent (its images and files described, in the order
 * of figures and files), or validate_code's answer with --validate. Returns the exit status. */
int run_show(const run_args_t *a, json_t *structured, const runfiles_t *figures,
             const runfiles_t *files);
/* JSON text with every real number as short as reads back the same (jansson prints %.17g:
 * 0.346 would come out as 0.34599999999999997). flags as json_dumps's; caller frees. */
char *run_show_dumps(const json_t *value, size_t flags);

#endif
