/* executor-node/child/wake.h — the one place a child writes its wake socket.
 *
 * The wake socket is how a child tells its zygote that a job is done ('d'), and how a session
 * answers a fork ('F', 'E', 'R'). The zygote answers a job when it hears 'd', so a byte there
 * must come from this C code after the job has returned, never from the job: a cell that wrote
 * it itself was answered `ok` with a forged result and ran on without a deadline or a slot.
 * Every write goes through wake_send's single `syscall` instruction, and the child's seccomp
 * prologue (sandbox/prologue.h) lets a write reach the wake socket only from there: any other
 * write, send or dup of that descriptor traps as the attack it is (security_violation). */
#ifndef SP_WAKE_H
#define SP_WAKE_H
#include <stddef.h>

/* The instruction write(2) returns to in wake_send: what the prologue compares seccomp's
 * instruction pointer with. */
extern const char wake_send_site[];

/* All of msg on fd (one datagram), retried on EINTR; 0, or -1 with errno set. */
int wake_send(int fd, const void *msg, size_t len);

#endif
