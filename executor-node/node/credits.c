/* executor-node/node/credits.c — see credits.h. Every change ends in s_balance, which hands out
 * free slots and asks for unused ones back; the invariant of credits.h holds after each call
 * (asserted). */
#include <assert.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/clock.h"
#include "credits.h"

typedef struct {
    int up;
    uint32_t held;       /* credit it holds, not yet used (our books) */
    uint32_t want;       /* jobs it said it has for us and no credit for */
    uint64_t want_until; /* monotonic: the WANT is stale after this */
    int reclaiming;      /* a RECLAIM awaits its RELEASE */
} link_books_t;

struct credits {
    uint32_t slots, free, busy;
    int n_links;
    int next_want; /* round robin among links that want */
    int draining;  /* credits_drain: nothing is granted any more */
    link_books_t link[CREDITS_MAX_LINKS];
    credits_io_t io;
    uint64_t (*now_ms)(void);
};

static void s_check(const credits_t *self)
{
    uint64_t held = 0;
    for (int i = 0; i < self->n_links; i++) held += self->link[i].held;
    assert((uint64_t)self->free + self->busy + held == self->slots);
    (void)held;
}

static void s_grant(credits_t *self, int i, uint32_t n)
{
    if (!n) return;
    self->free -= n;
    self->link[i].held += n;
    self->io.grant(self->io.arg, i, n);
}

/* 1 while the link wants credit: a WANT not repeated in time means nothing waits there now. */
static int s_wants(const credits_t *self, link_books_t *l)
{
    if (l->want && l->want_until <= self->now_ms()) l->want = 0;
    return l->up && l->want;
}

/* The next link that wants credit, round robin; -1 when none. */
static int s_wanting(credits_t *self, int except)
{
    for (int k = 0; k < self->n_links; k++) {
        int i = (self->next_want + k) % self->n_links;
        if (i != except && s_wants(self, &self->link[i])) {
            self->next_want = (i + 1) % self->n_links;
            return i;
        }
    }
    return -1;
}

static int s_primary(const credits_t *self)
{
    for (int i = 0; i < self->n_links; i++)
        if (self->link[i].up) return i;
    return -1;
}

static void s_balance(credits_t *self)
{
    if (self->draining) { /* nothing goes out; what comes back stays free */
        s_check(self);
        return;
    }
    /* free slots to those that want them, a slot at a time round robin, so two wanting
     * brokers share */
    int i;
    while (self->free && (i = s_wanting(self, -1)) >= 0) {
        s_grant(self, i, 1);
        self->link[i].want--;
    }
    int wanted = s_wanting(self, -1) >= 0;
    if (self->free && !wanted && (i = s_primary(self)) >= 0) s_grant(self, i, self->free);
    if (wanted) /* every slot is out: unused credit comes back from those that do not want */
        for (i = 0; i < self->n_links; i++) {
            link_books_t *l = &self->link[i];
            if (l->up && !s_wants(self, l) && l->held && !l->reclaiming) {
                l->reclaiming = 1;
                self->io.reclaim(self->io.arg, i, l->held);
            }
        }
    s_check(self);
}

credits_t *credits_new(uint32_t slots, int n_links, const credits_io_t *io,
                       uint64_t (*now_ms)(void))
{
    assert(n_links > 0 && n_links <= CREDITS_MAX_LINKS);
    credits_t *self = xcalloc(1, sizeof *self);
    self->slots = self->free = slots;
    self->n_links = n_links;
    self->io = *io;
    self->now_ms = now_ms ? now_ms : clock_mono_ms;
    return self;
}

void credits_destroy(credits_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

void credits_link_up(credits_t *self, int link)
{
    self->link[link].up = 1;
    s_balance(self);
}

void credits_link_down(credits_t *self, int link)
{
    link_books_t *l = &self->link[link];
    self->free += l->held;
    *l = (link_books_t){0};
    s_balance(self);
}

void credits_want(credits_t *self, int link, uint32_t n)
{
    if (!self->link[link].up || self->draining) return;
    self->link[link].want = n;
    self->link[link].want_until = self->now_ms() + CREDITS_WANT_MS;
    s_balance(self);
}

void credits_released(credits_t *self, int link, uint32_t n)
{
    link_books_t *l = &self->link[link];
    if (n > l->held) n = l->held; /* never more than we think it holds */
    l->held -= n;
    l->reclaiming = 0;
    self->free += n;
    s_balance(self);
}

int credits_can_start(const credits_t *self, int link)
{
    return self->link[link].held > 0 || self->free > 0;
}

void credits_start(credits_t *self, int link)
{
    link_books_t *l = &self->link[link];
    assert(credits_can_start(self, link));
    if (l->held)
        l->held--;
    else
        self->free--; /* it sent more than we counted: a free slot covers it */
    self->busy++;
    s_check(self);
}

int credits_finish(credits_t *self, int origin)
{
    assert(self->busy > 0);
    self->busy--;
    if (self->draining) { /* the slot returns to no broker: its answer is an ANSWER */
        self->free++;
        s_check(self);
        return -1;
    }
    int other = s_wanting(self, origin);
    if (self->link[origin].up && other < 0) {
        self->link[origin].held++; /* the RESULT returns it */
        s_check(self);
        return origin;
    }
    self->free++;
    s_balance(self);
    return -1;
}

void credits_drain(credits_t *self)
{
    if (self->draining) return;
    self->draining = 1;
    for (int i = 0; i < self->n_links; i++) {
        link_books_t *l = &self->link[i];
        l->want = 0;
        if (l->up && l->held) { /* once, even with a RECLAIM outstanding: RELEASEs are clamped */
            l->reclaiming = 1;
            self->io.reclaim(self->io.arg, i, l->held);
        }
    }
    s_check(self);
}

int credits_drained(const credits_t *self)
{
    if (!self->draining || self->busy) return 0;
    for (int i = 0; i < self->n_links; i++)
        if (self->link[i].held) return 0;
    return 1;
}

uint32_t credits_free(const credits_t *self)
{
    return self->free;
}

uint32_t credits_busy(const credits_t *self)
{
    return self->busy;
}

uint32_t credits_held(const credits_t *self, int link)
{
    return self->link[link].held;
}

int credits_is_up(const credits_t *self, int link)
{
    return self->link[link].up;
}
