/* tests/fuzz/fuzz_zmsg.c — libFuzzer target for the node's reading of what its zygotes send
 * (executor-node/link/zmsg.c zmsg_decode). A zygote's children run tenants' code, so the node takes
 * nothing on the channel on trust. Input: one type byte, then the payload. A message that
 * decodes must encode back to one that decodes to the same thing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor-node/link/zmsg.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static void s_same(const zmsg_t *a, const zmsg_t *b)
{
    switch (a->type) {
    case ZM_HELLO:
        s_check(strcmp(a->hello.profile, b->hello.profile) == 0 &&
                strcmp(a->hello.python, b->hello.python) == 0 &&
                strcmp(a->hello.layers, b->hello.layers) == 0 &&
                a->hello.packages_len == b->hello.packages_len &&
                (!a->hello.packages_len ||
                 memcmp(a->hello.packages, b->hello.packages, a->hello.packages_len) == 0) &&
                a->hello.base_vm == b->hello.base_vm &&
                a->hello.landlock_abi == b->hello.landlock_abi);
        break;
    case ZM_STATS:
        s_check((unsigned)a->stats.status < ST__COUNT && a->stats.job == b->stats.job &&
                a->stats.status == b->stats.status &&
                memcmp(&a->stats.wall_ms, &b->stats.wall_ms, sizeof a->stats.wall_ms) == 0 &&
                memcmp(&a->stats.cpu_ms, &b->stats.cpu_ms, sizeof a->stats.cpu_ms) == 0 &&
                a->stats.max_rss_kb == b->stats.max_rss_kb && a->stats.kind == b->stats.kind &&
                strcmp(a->stats.syscall, b->stats.syscall) == 0 &&
                a->stats.forks == b->stats.forks && a->stats.pool == b->stats.pool);
        break;
    case ZM_PROGRESS:
        s_check(
            (!a->progress.stream) == (!b->progress.stream) && a->progress.len == b->progress.len &&
            (!a->progress.len || memcmp(a->progress.data, b->progress.data, a->progress.len) == 0));
        break;
    case ZM_SESSION:
        s_check(a->session.event == b->session.event &&
                strcmp(a->session.tenant, b->session.tenant) == 0 &&
                a->session.idle_timeout_s == b->session.idle_timeout_s &&
                a->session.memory_mb == b->session.memory_mb &&
                a->session.memory_kb == b->session.memory_kb &&
                strcmp(a->session.reason, b->session.reason) == 0);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t id[ID_BYTES] = {0};
    if (size < 1) return 0;
    zmsg_t m, back;
    char err[128];
    if (zmsg_decode(data[0], id, data + 1, size - 1, &m, err, sizeof err) < 0) {
        s_check(err[0] != '\0');
        return 0;
    }
    s_check(m.payload == data + 1 && m.len == size - 1);
    if (m.type != ZM_HELLO && m.type != ZM_STATS && m.type != ZM_PROGRESS && m.type != ZM_SESSION)
        return 0;
    buf_t b;
    buf_init(&b);
    zmsg_encode(&m, &b);
    s_check(zmsg_decode(data[0], id, b.data, b.len, &back, err, sizeof err) == 0);
    s_same(&m, &back);
    buf_free(&b);
    return 0;
}
