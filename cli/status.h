/* cli/status.h — `snakepit status`: the whole farm on one screen, read from the snapshots
 * every process publishes to Redis as sp:metrics:{component}:{instance}:
 * brokers (executors, slots, queue, rates), services (queue depth and slots per service),
 * executor nodes (slots busy/free, jobs, violations, zygote restarts) and front-ends, each
 * with the age of its snapshot. Rates come from two readings an interval apart. Exit status:
 * 0 healthy, 1 degraded (no broker, no executor, or a stale snapshot), 64 usage, 69 when the
 * farm's Redis cannot be reached. */
#ifndef SP_STATUS_H
#define SP_STATUS_H

int status_main(int argc, char **argv);

#endif
