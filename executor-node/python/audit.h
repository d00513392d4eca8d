/* executor-node/python/audit.h — the Python layer's audit hook (PEP 578): defence in depth, never
 * the boundary. Installed once in the zygote (it cannot be removed once added) and armed in each
 * child when its job starts, it refuses operations as policy.h says — a process, a socket, a
 * path outside the workspace (or, to read, the profile's read-only paths), ctypes, frame walks,
 * gc.get_*, code.__new__, marshal, unpickling anything that resolves outside the profile's data
 * modules — and reports each refusal in the job area (outcome.c lists them as the Result's
 * security_events, and makes the job a security_violation when one is what ended it). */
#ifndef SP_AUDIT_H
#define SP_AUDIT_H

#include "common/profiles.h"
#include "executor-node/area/jobarea.h"

typedef struct _object PyObject;

/* Zygote, once: the hook, disarmed, with profile's policy. 0, or -1 with a Python error set. */
int audit_install(const profile_t *profile);
/* Child, before its job: the workspace directory the hook lets the job use ("" none). */
void audit_set_workspace(const char *dir);
/* Child, at its job: on enforces from now on and reports into area. */
void audit_arm(area_t *area, int on);
/* Child, at its job: its tenant (for the messages that say where egress is granted) and
 * whether it may use the network (the node granted it egress, policy.h). */
void audit_set_job(const char *tenant, int egress);
/* Whether unpickling may name module.name, as the hook would judge pickle.find_class: a
 * session's restore checks each variable first, so that a name the profile refuses fails that
 * variable instead of counting as an attack (session.py). */
int audit_unpickle_allowed(const char *module, const char *name);
/* The verdict the hook would give event with these arguments (path, or NULL when unknown; num
 * set when has_num), and why in a few words (NULL when allowed): validate_code asks the very
 * rules execute_code applies (validate.py). */
int audit_judge(const char *event, const char *path, const char *mode, long num, int has_num,
                const char **why);

/* _snakepit.PermissionError, the PermissionError subclass the hook raises — named so, that a
 * job's traceback reads as the familiar one — made at the first call (runner.c's, when it adds
 * it to _snakepit; until then the hook raises PermissionError itself), so that the runner tells
 * a sandbox refusal that ended a job from one the code caught. Borrowed; NULL with a Python
 * error set when it cannot be made. */
PyObject *audit_permission_error(void);

#endif
