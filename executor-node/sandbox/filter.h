/* executor-node/sandbox/filter.h — the seccomp layer: one allowlist per profile, compiled to BPF
 * once in the zygote (filter_compile) and loaded by each pooled child (filter_enter) as the last
 * layer before its job. What Python can report cleanly fails with EPERM; what only an attack asks
 * for traps, and the SIGSYS handler (childsig.h) writes the syscall's number into the child's job
 * area, where the zygote reads it to answer security_violation naming the syscall
 * (outcome.c). */
#ifndef SP_FILTER_H
#define SP_FILTER_H
#include <linux/filter.h>
#include <stddef.h>

#include "common/profiles.h"
#include "executor-node/area/jobarea.h"
#include "prologue.h"

/* Zygote: the profile's program into out (its instructions owned by out). 0, or -1 with the
 * reason in err. */
int filter_compile(const profile_t *profile, struct sock_fprog *out, char *err, size_t errlen);
/* Child, after no_new_privs and childsig_enter: one program — a prologue that keeps kill(2) and
 * its kin to this process (and, for a session's child, what its session loop needs: mine's
 * session fields; its pid is filled in here), and the shared program. 0, or -1 with errno. */
int filter_enter(const struct sock_fprog *shared, const prologue_t *mine);
/* The name of a syscall number, for reports ("socket"); "syscall_N" when unknown. */
const char *filter_syscall_name(int nr, char *buf, size_t cap);

#endif
