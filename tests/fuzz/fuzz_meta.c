/* tests/fuzz/fuzz_meta.c — libFuzzer target for the zygote's reading of what a job's child
 * wrote into its shared area (executor-node/zygote/pool/outcome.c outcome_read_meta). The child ran
 * hostile code, so its meta may be anything; what comes out must be a status the child is
 * allowed to claim (never security_violation, lost, rejected, timeout...), its exit code a
 * process's (0..255), and its figures must be PNGs within the caps, sized from their own
 * headers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor-node/zygote/pool/outcome_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    result_t res;
    result_init(&res);
    meta_flags_t flags = {0};
    outcome_read_meta(data, size, &res, &flags);
    status_t st = res.status;
    if (size && !(st == ST_OK || st == ST_ERROR || st == ST_SYNTAX_ERROR || st == ST_MEMORY_LIMIT ||
                  st == ST_OUTPUT_LIMIT || st == ST_INTERNAL_ERROR))
        abort();
    size_t total = 0;
    if (res.n_images > OUTCOME_MAX_IMAGES) abort();
    for (size_t i = 0; i < res.n_images; i++) {
        const result_image_t *im = &res.images[i];
        if (im->len < 24 || im->len > OUTCOME_MAX_IMAGE || memcmp(im->data, "\x89PNG", 4) != 0 ||
            !im->width || !im->height)
            abort();
        total += im->len;
    }
    if (total > OUTCOME_MAX_IMAGES_BYTES) abort();
    total = 0;
    if (res.n_outputs > OUTCOME_MAX_OUTPUTS) abort();
    for (size_t i = 0; i < res.n_outputs; i++) {
        const result_output_t *o = &res.outputs[i];
        if (!o->mime || !o->kind || o->len > OUTCOME_MAX_OUTPUT) abort();
        if (!strcmp(o->mime, "image/png") && (o->len < 24 || memcmp(o->data, "\x89PNG", 4) != 0))
            abort();
        total += o->len;
    }
    if (total > OUTCOME_MAX_OUTPUTS_BYTES) abort();
    if (flags.exit_code < 0 || flags.exit_code > 255) abort(); /* as a process's status is */
    result_clear(&res);
    return 0;
}
