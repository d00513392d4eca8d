/* executor-node/audit.h — the Python layer's audit hook (PEP 578): defence in depth, never the
 * boundary. Installed once in the zygote (it cannot be removed once added) and armed in each
 * child when its job starts, it blocks what user code never needs and escape chains end in —
 * open() beyond the profile's read-only paths and the child's workspace, os.*, subprocess.*,
 * socket.*, ctypes.*, frame walks (tb_frame, gi_frame), gc.get_*, code.__new__, marshal,
 * unpickling anything but the profile's modules — and reports the first blocked event in the
 * job area, which makes the job a security_violation (outcome.c). */
#ifndef SP_AUDIT_H
#define SP_AUDIT_H

#include "../common/profiles.h"
#include "jobarea.h"

/* Zygote, once: the hook, disarmed, with profile's policy. 0, or -1 with a Python error set. */
int audit_install(const profile_t *profile);
/* Child, before its job: the workspace directory the hook lets the job use ("" none). */
void audit_set_workspace(const char *dir);
/* Child, at its job: on enforces from now on and reports into area. */
void audit_arm(area_t *area, int on);
/* The policy: 1 when the event would be blocked. arg1 is the event's path (or attribute or
 * module name); mode and flags describe an "open" (mode: the name, for pickle.find_class). */
int audit_event_blocked(const char *event, const char *arg1, const char *mode, long flags);

#endif
