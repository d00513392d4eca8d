/* executor-node/area/scrub.c — see scrub.h. explicit_bzero: a plain memset before free may be
 * optimised away. */
#define _GNU_SOURCE
#include <string.h>

#include "scrub.h"

void scrub_str(char *s)
{
    if (s) explicit_bzero(s, strlen(s));
}

static void s_bytes(char *p, size_t len)
{
    if (p) explicit_bzero(p, len);
}

void scrub_jobspec(jobspec_t *job)
{
    s_bytes(job->code, job->code_len);
    s_bytes(job->stdin_data, job->stdin_len);
    for (size_t i = 0; i < job->n_files; i++) {
        scrub_str(job->files[i].path);
        s_bytes(job->files[i].data, job->files[i].len);
    }
    for (size_t i = 0; i < job->n_inspect; i++) scrub_str(job->inspect[i]);
    jobspec_clear(job);
}

void scrub_result(result_t *res)
{
    s_bytes(res->out, res->out_len);
    s_bytes(res->err, res->err_len);
    scrub_str(res->result);
    scrub_str(res->variables);
    scrub_str(res->validation);
    scrub_str(res->error.message);
    scrub_str(res->error.traceback);
    for (size_t i = 0; i < res->n_images; i++) s_bytes(res->images[i].data, res->images[i].len);
    for (size_t i = 0; i < res->n_files; i++) {
        scrub_str(res->files[i].path);
        s_bytes(res->files[i].data, res->files[i].len);
    }
    for (size_t i = 0; i < res->n_outputs; i++) s_bytes(res->outputs[i].data, res->outputs[i].len);
    result_clear(res);
}
