/* proto/client.h — the submitting side of the client ⇄ broker channel, shared by the MCP
 * front-end, the CLI and the benchmark: a DEALER socket on the caller's loop, submit and
 * cancel, and one final answer per job whatever happens to the broker.
 *
 * Exactly-one-answer rule: every job submitted gets exactly one final event (RESULT or
 * REJECT from the broker, or one the client makes up: `lost` when the broker goes silent or
 * reconnects while the job is pending, `timeout` when the job's deadline plus a grace passes
 * without an answer). Answers that arrive for jobs no longer pending are dropped. */
#ifndef SP_CLIENT_H
#define SP_CLIENT_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "common/loop.h"
#include "wire.h"

typedef struct client client_t;

typedef enum {
    CLIENT_ACCEPTED, /* queued at the broker */
    CLIENT_PROGRESS, /* body: a progress chunk (msgpack) */
    CLIENT_RESULT,   /* final; body: a Result */
    CLIENT_LOST,     /* final, only with hand_back_lost: the connection to the broker was lost
                        while the job was pending; body: the `lost` Result the client made. The
                        caller may send the job to another broker (marked resubmit). */
} client_event_t;

typedef void(client_event_fn)(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                              const uint8_t *body, size_t len);

typedef struct {
    const char *endpoint;      /* the broker's client endpoint */
    long        heartbeat_ms;  /* PING interval; 3 silent intervals = broker gone */
    long        grace_ms;      /* past a job's deadline before it is answered `timeout` */
    const char *curve_server_key; /* Z85 broker public key, NULL for plain */
    const char *curve_public_key; /* Z85 own key pair */
    const char *curve_secret_key;
    int         hand_back_lost;   /* jobs lost with the connection come as CLIENT_LOST */
} client_conf_t;

client_t *client_new(void *zmq_ctx, loop_t *loop, const client_conf_t *conf, client_event_fn *fn,
                     void *arg);
void      client_destroy(client_t **self_p);

/* Submits a JobSpec body. 0, or -1 when the socket cannot take it now (the caller answers
 * the job itself; nothing is pending). */
int    client_submit(client_t *self, const char *service, const uint8_t id[ID_BYTES],
                     const route_t *route, const void *jobspec, size_t len);
int    client_cancel(client_t *self, const char *service, const uint8_t id[ID_BYTES]);
size_t client_pending(const client_t *self);
int    client_connected(const client_t *self); /* the broker answered recently */

#endif
