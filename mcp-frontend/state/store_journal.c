/* mcp-frontend/state/store_journal.c — see store_journal.h. A singly linked FIFO with a cursor at
 * the first entry not yet sent: replies come in the order commands were sent, so everything
 * before the cursor is either acknowledged or in flight. */
#include <assert.h>
#include <stdlib.h>

#include "common/buf.h"
#include "store_journal.h"

struct journal {
    journal_entry_t *head, *tail;
    journal_entry_t *unsent; /* first entry not on the wire; NULL when all are */
    long n, unacked, bytes;
    long max_entries, max_bytes, replay_ms;
};

journal_t *journal_new(long max_entries, long max_bytes, long replay_ms)
{
    journal_t *self = xcalloc(1, sizeof *self);
    self->max_entries = max_entries > 0 ? max_entries : 1;
    self->max_bytes = max_bytes > 0 ? max_bytes : 1;
    self->replay_ms = replay_ms;
    return self;
}

static void s_pop_head(journal_t *self)
{
    journal_entry_t *e = self->head;
    assert(e && e != self->unsent);
    self->head = e->next;
    if (!self->head) self->tail = NULL;
    self->n--;
    self->bytes -= (long)e->len;
    if (!e->acked) self->unacked--;
    free(e->cmd);
    free(e);
}

void journal_destroy(journal_t **self_p)
{
    journal_t *self = *self_p;
    if (!self) return;
    self->unsent = NULL;
    while (self->head) s_pop_head(self);
    free(self);
    *self_p = NULL;
}

/* Room for len more bytes: drops acknowledged entries from the head (only replay needed
 * them). 1 when there is room. */
static int s_make_room(journal_t *self, size_t len)
{
    while (self->n >= self->max_entries || self->bytes + (long)len > self->max_bytes) {
        if (!self->head || !self->head->acked || self->head == self->unsent) return 0;
        s_pop_head(self);
    }
    return 1;
}

/* Moves the cursor past `once` entries already done (they are never sent again). */
static void s_skip_done(journal_t *self)
{
    while (self->unsent && self->unsent->once && self->unsent->acked)
        self->unsent = self->unsent->next;
}

journal_entry_t *journal_append(journal_t *self, char *cmd, size_t len)
{
    if (!s_make_room(self, len)) {
        free(cmd);
        return NULL;
    }
    journal_entry_t *e = xcalloc(1, sizeof *e);
    e->cmd = cmd;
    e->len = len;
    if (self->tail)
        self->tail->next = e;
    else
        self->head = e;
    self->tail = e;
    if (!self->unsent) self->unsent = e;
    self->n++;
    self->unacked++;
    self->bytes += (long)len;
    return e;
}

journal_entry_t *journal_append_once(journal_t *self, char *cmd, size_t len)
{
    journal_entry_t *e = journal_append(self, cmd, len);
    if (e) e->once = 1;
    return e;
}

journal_entry_t *journal_next_unsent(journal_t *self)
{
    return self->unsent;
}

void journal_mark_sent(journal_t *self, journal_entry_t *e)
{
    assert(e == self->unsent);
    e->sent = 1;
    self->unsent = e->next;
    s_skip_done(self);
}

void journal_acked(journal_t *self, journal_entry_t *e, uint64_t now_ms)
{
    if (e->acked) return;
    e->acked = 1;
    e->sent = 0;
    e->acked_ms = now_ms;
    self->unacked--;
    journal_trim(self, now_ms);
}

void journal_rewind(journal_t *self)
{
    for (journal_entry_t *e = self->head; e; e = e->next) {
        if (e->once) {
            if (e->sent && !e->acked) { /* it may have been heard: done, never again */
                e->acked = 1;
                self->unacked--;
            }
        } else if (e->acked) {
            e->acked = 0; /* it will be sent (and answered) again */
            self->unacked++;
        }
        e->sent = 0;
    }
    self->unsent = self->head;
    s_skip_done(self);
}

void journal_trim(journal_t *self, uint64_t now_ms)
{
    while (self->head && self->head->acked && self->head != self->unsent &&
           (self->head->once || now_ms - self->head->acked_ms >= (uint64_t)self->replay_ms))
        s_pop_head(self);
}

long journal_entries(const journal_t *self)
{
    return self->n;
}

long journal_unacked(const journal_t *self)
{
    return self->unacked;
}

long journal_bytes(const journal_t *self)
{
    return self->bytes;
}
