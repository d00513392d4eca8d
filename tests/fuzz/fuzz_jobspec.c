/* tests/fuzz/fuzz_jobspec.c — libFuzzer target for the executor's job decoding
 * (proto/job.c jobspec_decode: every zygote and child decodes what the front-end sent).
 * Beyond "no crash, no sanitizer report": a JobSpec that decodes must respect every cap, and
 * must survive an encode/decode round trip unchanged; its egress rules (what the node hands
 * the egress process) are each one that parses, and the node's peek sees the same ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/egress_rule.h"
#include "proto/job.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static void s_check_caps(const jobspec_t *j)
{
    s_check(j->code && j->code_len <= JOB_MAX_CODE && j->tenant && j->service);
    s_check(strlen(j->tenant) <= JOB_MAX_TENANT && strlen(j->service) <= JOB_MAX_SERVICE);
    s_check(j->n_inspect <= JOB_MAX_NAMES && j->n_allowed_imports <= JOB_MAX_NAMES);
    s_check(j->n_files <= JOB_MAX_FILES && j->stdin_len <= JOB_MAX_STDIN);
    for (size_t i = 0; i < j->n_files; i++)
        s_check(j->files[i].path && strlen(j->files[i].path) <= JOB_MAX_PATH && j->files[i].len <= JOB_MAX_FILE);
    s_check(j->egress.n_rules <= EGRESS_MAX_RULES && j->egress.max_bytes <= JOB_MAX_EGRESS_BYTES &&
            j->egress.max_conns <= JOB_MAX_EGRESS_CONNS);
    for (size_t i = 0; i < j->egress.n_rules; i++) {
        egress_rule_t r;
        char err[200];
        s_check(egress_rule_parse(j->egress.rules[i], strlen(j->egress.rules[i]), &r, err,
                                  sizeof err) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jobspec_t job, back;
    char      err[256];
    if (jobspec_decode(data, size, &job, err, sizeof err) < 0) {
        s_check(err[0] != '\0'); /* a refusal always says why */
        return 0;
    }
    s_check_caps(&job);
    job_egress_t peeked;
    s_check(jobspec_peek_egress(data, size, &peeked) == 0 && peeked.n_rules == job.egress.n_rules &&
            peeked.max_bytes == job.egress.max_bytes);
    jobspec_free_egress(&peeked);
    buf_t b;
    buf_init(&b);
    jobspec_encode(&job, &b);
    s_check(jobspec_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(back.kind == job.kind && back.code_len == job.code_len &&
            memcmp(back.code, job.code, job.code_len) == 0 && strcmp(back.tenant, job.tenant) == 0 &&
            back.n_inspect == job.n_inspect && back.n_files == job.n_files &&
            back.limits.wall_ms == job.limits.wall_ms && back.limits.memory_mb == job.limits.memory_mb &&
            back.capture_output == job.capture_output && back.submitted_ms == job.submitted_ms &&
            back.egress.n_rules == job.egress.n_rules &&
            back.egress.max_conns == job.egress.max_conns);
    jobspec_clear(&back);
    jobspec_clear(&job);
    buf_free(&b);
    return 0;
}
