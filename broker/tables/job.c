/* broker/tables/job.c — see job.h. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "job.h"

static job_t *s_new(const uint8_t id[ID_BYTES], const route_t *route)
{
    job_t *self = xcalloc(1, sizeof *self);
    memcpy(self->id, id, ID_BYTES);
    self->route = *route;
    self->route.attempt = 0; /* the broker counts attempts, whatever the client wrote */
    self->route.resubmit = route->resubmit ? 1 : 0;
    self->heap_index = JOB_NOT_IN_HEAP;
    return self;
}

job_t *job_new(const uint8_t id[ID_BYTES], const route_t *route, zmq_msg_t *body)
{
    job_t *self = s_new(id, route);
    zmq_msg_init(&self->body);
    zmq_msg_move(&self->body, body);
    self->body_len = zmq_msg_size(&self->body);
    return self;
}

job_t *job_new_copy(const uint8_t id[ID_BYTES], const route_t *route, const void *body, size_t len)
{
    job_t *self = s_new(id, route);
    if (zmq_msg_init_size(&self->body, len) < 0) abort(); /* only ENOMEM */
    if (len) memcpy(zmq_msg_data(&self->body), body, len);
    self->body_len = len;
    return self;
}

void job_destroy(job_t **self_p)
{
    assert(self_p);
    job_t *self = *self_p;
    if (!self) return;
    assert(self->state == JOB_DETACHED && self->heap_index == JOB_NOT_IN_HEAP);
    zmq_msg_close(&self->body);
    free(self->probe_wait);
    free(self);
    *self_p = NULL;
}
