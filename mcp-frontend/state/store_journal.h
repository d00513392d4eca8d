/* mcp-frontend/state/store_journal.h — the store's writes, in order, until Redis surely has them
 * (store.h). A write is appended, goes on the wire when the connection can take it, and is
 * acknowledged by its reply; it is kept past that for `replay_ms`, because an acknowledgement
 * is not yet durability: a Sentinel failover loses what the old master had not replicated,
 * and a Redis killed while its AOF write was postponed loses the last second. Whenever the
 * connection is made again, everything still in the journal is sent again from the start, in
 * order — which is why every write the front-end makes is idempotent (records.c).
 *
 * A write that must not be repeated (a PUBLISH: its listeners would hear it twice) is appended
 * `once`: it keeps its place in the order, but once on the wire it is never sent again, and
 * it is not kept for replay.
 *
 * Bounded by entries and bytes: when full, the oldest acknowledged entries go first (they are
 * only kept for replay), and a write that still does not fit is refused (the caller counts it
 * dropped). No I/O here: store.c sends, this file keeps the books (tests/unit drive it). */
#ifndef SP_FE_STORE_JOURNAL_H
#define SP_FE_STORE_JOURNAL_H
#include <stddef.h>
#include <stdint.h>

typedef struct journal journal_t;
typedef struct journal_entry journal_entry_t;

struct journal_entry {
    char *cmd; /* RESP-formatted */
    size_t len;
    int sent;          /* on the wire on the current connection, reply not yet in */
    int acked;         /* Redis answered it (a `once` entry: or its connection went) */
    int once;          /* sent at most once, never replayed */
    uint64_t acked_ms; /* monotonic */
    journal_entry_t *next;
};

journal_t *journal_new(long max_entries, long max_bytes, long replay_ms);
void journal_destroy(journal_t **self_p);

/* Appends a write, taking cmd (freed here when refused). NULL when the journal is full even
 * after dropping every acknowledged entry. */
journal_entry_t *journal_append(journal_t *self, char *cmd, size_t len);
/* The same for a write sent at most once (see above). */
journal_entry_t *journal_append_once(journal_t *self, char *cmd, size_t len);
/* The oldest entry not on the wire, or NULL. */
journal_entry_t *journal_next_unsent(journal_t *self);
void journal_mark_sent(journal_t *self, journal_entry_t *e);
/* Its reply came: kept for replay until replay_ms have passed, then trimmed. */
void journal_acked(journal_t *self, journal_entry_t *e, uint64_t now_ms);
/* The connection is gone: every entry, acknowledged or not, is to be sent again — but a
 * `once` entry that was on the wire, which counts as done. */
void journal_rewind(journal_t *self);
/* Frees acknowledged entries older than the replay window from the head. */
void journal_trim(journal_t *self, uint64_t now_ms);

long journal_entries(const journal_t *self);
long journal_unacked(const journal_t *self); /* waiting or in flight */
long journal_bytes(const journal_t *self);

#endif
