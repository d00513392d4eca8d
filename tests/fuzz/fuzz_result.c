/* tests/fuzz/fuzz_result.c — libFuzzer target for Result decoding (proto/result.c
 * result_decode: the front-end and the CLI decode what executors, which run hostile code,
 * send back). A Result that decodes must respect the caps and round-trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/result.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    result_t res, back;
    char     err[256];
    if (result_decode(data, size, &res, err, sizeof err) < 0) {
        s_check(err[0] != '\0');
        return 0;
    }
    s_check((unsigned)res.status < ST__COUNT);
    s_check(res.out_len <= RESULT_MAX_STREAM && res.err_len <= RESULT_MAX_STREAM);
    s_check(res.n_images <= RESULT_MAX_IMAGES && res.n_files <= RESULT_MAX_FILES);
    buf_t b;
    buf_init(&b);
    result_encode(&res, &b);
    s_check(result_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_check(back.status == res.status && back.out_len == res.out_len &&
            (res.out_len == 0 || memcmp(back.out, res.out, res.out_len) == 0) &&
            back.err_len == res.err_len && back.error.present == res.error.present &&
            back.n_images == res.n_images && back.max_rss_kb == res.max_rss_kb &&
            (!res.result) == (!back.result) && (!res.result || strcmp(res.result, back.result) == 0));
    result_clear(&back);
    result_clear(&res);
    buf_free(&b);
    return 0;
}
