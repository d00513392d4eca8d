/* proto/monitor.h — watching a ZeroMQ socket's connections (zmq_socket_monitor): a PAIR socket
 * the events arrive on, and reading them. The submitter (proto/client.c) and the executor's
 * broker links (executor-node/node/broker_link.c) learn this way at once that a connection dropped
 * — a killed peer — which heartbeats would tell only seconds later. */
#ifndef SP_MONITOR_H
#define SP_MONITOR_H

/* Starts monitoring sock for events (ZMQ_EVENT_* bits); must come before zmq_connect to see its
 * events. The PAIR socket to read them from, or NULL (logged) when monitoring failed. */
void *monitor_open(void *ctx, void *sock, int events);
/* Stops monitoring sock and closes the PAIR (*monitor_p becomes NULL). */
void monitor_close(void *sock, void **monitor_p);
/* Reads what is waiting, without blocking (at most 100 events): the OR of their event ids. */
int monitor_read(void *monitor);

#endif
