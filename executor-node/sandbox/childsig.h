/* executor-node/sandbox/childsig.h — a child's own signal handlers: the accounting behind an honest
 * status, and the report of a trapped syscall.
 *
 *   SIGSYS   seccomp's SECCOMP_RET_TRAP: the syscall is recorded in the job area and the job
 *            ends (security_violation). The filter's prologue also traps every signal a job
 *            sends itself: each child is pid 1 of its own pid namespace, and the kernel ignores
 *            a default-action signal that init sends itself, so os.kill(os.getpid(), SIGKILL)
 *            or abort() would just return. The handler does what the kernel would do for an
 *            ordinary process: nothing for an ignored or default-ignored signal, the code's own
 *            handler for a handled one, and for a fatal one the job ends, recorded as
 *            self_signal.
 *   SIGXCPU  RLIMIT_CPU's soft limit (pid 1 ignores it by default too): recorded as the CPU
 *            limit, the job ends.
 *   SIGSEGV, SIGBUS, SIGILL, SIGFPE  a crash: on an alternate stack, records the signal and
 *            how much address space RLIMIT_AS still leaves (a probe mapping), then lets the
 *            fault repeat with the default action. outcome.c calls it memory_limit only when
 *            the address space was all but full; a crash with room to spare is a crash.
 *
 * Everything recorded is the child's own word about its own job: it can make that job's
 * status worse or odder, never another's. */
#ifndef SP_CHILDSIG_H
#define SP_CHILDSIG_H
#include "executor-node/area/jobarea.h"

/* Child, before seccomp is loaded: the handlers, reporting into area. 0, or -1 (errno). */
int childsig_enter(area_t *area);
/* A session's clone (session_child.h), its handlers inherited: from now on they report into its
 * own area, and "itself" is its own pid, no longer the session's it was cloned from (whose
 * seccomp prologue it also inherited: a signal to that pid is trapped and, being another
 * process's, ends the clone as an attack). */
void childsig_moved(area_t *area);

#endif
