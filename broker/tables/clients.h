/* broker/tables/clients.h — the submitting connections on the client channel (front-ends, CLIs,
 * benches), by ROUTER routing id: where a job's answers go, who may cancel it, and whether
 * the submitter is still there. A client that has PINGed is expected to keep doing so
 * (PROTOCOL.md §2); once it falls silent for the liveness window its jobs are answered and
 * dropped rather than run for nobody. Entries are bounded by a cap and removed once a client
 * has no jobs and has been silent for the liveness window. */
#ifndef SP_CLIENTS_H
#define SP_CLIENTS_H
#include <stddef.h>
#include <stdint.h>

#define CLIENT_MAX_IDENTITY 255

struct client {
    uint8_t identity[CLIENT_MAX_IDENTITY];
    size_t identity_len;
    uint64_t last_seen_ms; /* monotonic, any message */
    int pings;             /* it heartbeats: silence means it is gone */
    int gone;              /* unreachable or silent: nothing more is sent to it */
    size_t jobs;           /* jobs of its in the broker, queued or leased */
};
typedef struct client client_t;
typedef struct clients clients_t;

clients_t *clients_new(size_t max);
void clients_destroy(clients_t **self_p);
/* The client for a routing id, created on first contact and marked seen; NULL when the
 * table is full (or the id is too long). */
client_t *clients_touch(clients_t *self, const void *identity, size_t len, uint64_t now_ms);
void clients_remove(clients_t *self, client_t **c_p);
size_t clients_count(const clients_t *self);
/* Collects up to max clients for which pick(arg, c) is true; returns how many. */
size_t clients_select(const clients_t *self, int (*pick)(void *arg, const client_t *c), void *arg,
                      client_t **out, size_t max);

#endif
