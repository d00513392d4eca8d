/* executor-node/python/pyfork.h — the after-fork work CPython does in every child, cut to what a
 * zygote's child needs.
 *
 * Every page a child writes is a copy-on-write fault (~2.7 µs on the 2-core VM of
 * bench/README.md). PyOS_AfterFork_Child runs every os.register_at_fork after_in_child
 * callback, and two of them — threading's _after_fork and logging's lock reinitialisation —
 * walk every thread, handler and lock object to make new locks, in case another thread held
 * one at fork time: ~145 of the ~450 pages a print(1) job used to write. A zygote has no other
 * thread and forks from its C loop, never inside Python code, so no lock is held at fork; its
 * main thread's identity (pthread_self) is its child's too; and a child cannot start a thread
 * (seccomp refuses the clone). pyfork_prune_hooks drops exactly those two callbacks, found by
 * identity; every other one (random's reseed above all, numpy's from warm.py) still runs, and
 * PyOS_AfterFork_Child still does its own C-level work. */
#ifndef SP_PYFORK_H
#define SP_PYFORK_H

/* Zygote, after the warm imports and warm-up (the hooks are registered by then), with the
 * GIL. Returns how many callbacks were dropped, or -1 with a Python error set. */
int pyfork_prune_hooks(void);

#endif
