/* executor-node/area/scrub.h — tenant data leaves no trace in the zygote's heap.
 *
 * Every child is a fork of its zygote and inherits the zygote's memory, freed chunks included.
 * In python.data_science, numpy reads any address of its own process in one line
 * (np.lib.stride_tricks.as_strided), so a job could read what earlier jobs left in freed
 * memory: their code, files, stdin and results. The zygote therefore zeroes each buffer that
 * held a job's or a result's bytes before freeing it. */
#ifndef SP_SCRUB_H
#define SP_SCRUB_H
#include "proto/job.h"
#include "proto/result.h"

void scrub_jobspec(jobspec_t *job); /* zeroes, then jobspec_clear */
void scrub_result(result_t *res);   /* zeroes, then result_clear */
void scrub_str(char *s);            /* zeroes a NUL-terminated string in place */

#endif
