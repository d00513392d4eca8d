/* executor-node/node/node.h — the executor node process: one link per broker it serves
 * (broker_link.h, --broker a comma list), one zygote per served profile (zygotes.h), its slots
 * shared among the brokers as credit (slots.h, credits.h).
 *
 * The node routes (slots.h): a JOB from a broker takes a free slot and goes to its profile's
 * zygote; the zygote's RESULT frees the slot and goes back; a zygote that dies gets every job it
 * held answered at once. It also owns the process: signals, /metrics, the Redis snapshot
 * (snapshot.h), and the order of start-up — zygotes first, before any ZeroMQ thread exists, so
 * no zygote ever holds a copy of ZeroMQ's state. */
#ifndef SP_NODE_H
#define SP_NODE_H

#include "node_conf.h"

#define NODE_MAX_BROKERS 8 /* credits.h's CREDITS_MAX_LINKS */

/* Runs the node until SIGTERM or SIGINT (or POST /drain) and its drain: it tells the brokers it
 * is leaving (LEAVING), takes no new job, and stops once its running jobs are answered or
 * --drain-grace-s is over; a second signal stops it at once. Returns the exit status (0 after a
 * drain, 2: bad configuration, 3: no profile's sandbox could start; a profile whose sandbox
 * cannot start is not served, and the others are). */
int node_main(const node_conf_t *conf);

#endif
