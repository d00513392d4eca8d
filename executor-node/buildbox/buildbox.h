/* executor-node/buildbox.h — one dependency environment built as untrusted work
 * (`snakepit-zygote --build-env PROFILE ...`, started by the node's envs.c with posix_spawn).
 *
 * Two processes. The outer one runs as the node does and never runs package code: it makes
 * the build's directory (ENVS/<profile>/build-*, owned by the run uid), forks the inner one
 * into the jail (buildjail.h), which execs envbuild.py, and reads its answer. On success it
 * makes the result root's and read-only (no setuid bit, no special file, symlinks untouched),
 * moves it to ENVS/<profile>/<digest> and writes the requested set's answer file
 * (ENVS/<profile>/requests/<key>), which a later call or node on the same disk reads instead of
 * building. It prints the answer for the node, one line per fact (envs.h reads them):
 *   STATUS ok|base|error, SITE <host site-packages>, MODULES a,b, DISTS n==v,..., ERROR <why>
 * ERROR never names a host path: a tenant reads it. What went wrong on the host goes to the
 * node's log instead (stderr). */
#ifndef SP_BUILDBOX_H
#define SP_BUILDBOX_H

/* main() of `snakepit-zygote --build-env ...`; the exit code is 0 whenever an answer was
 * printed (an error answer included). */
int buildbox_main(int argc, char **argv);

#endif
