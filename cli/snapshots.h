/* cli/snapshots.h — the metrics snapshots each process of a farm publishes to Redis as
 * sp:metrics:{component}:{instance}, read for `snakepit status`.
 *
 * Snapshots are read with SCAN (never KEYS: the farm's Redis also holds every execution
 * record) and one pipelined HGETALL + PTTL per key. Field values are kept as JSON values:
 * numbers where the text is a number, objects where it is a JSON object (the broker's
 * per-service table), strings otherwise, so `--json` passes on fields nobody here knows yet.
 * A counter's rate is its difference between two readings over the difference of the
 * snapshots' own timestamps, not of our clock: a process publishes once a second, so two
 * readings a second apart may see the same snapshot twice. */
#ifndef SP_SNAPSHOTS_H
#define SP_SNAPSHOTS_H
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stddef.h>

#define SNAPSHOTS_MAX     4096
#define SNAPSHOT_STALE_MS 5000 /* publishers write every second; the key's TTL is about 10 s */

typedef struct {
    char component[32];
    char instance[160];
    json_t *fields;   /* object: field -> number | object | string */
    long long ts_ms;  /* the snapshot's own time; 0 when it carries none */
    long long ttl_ms; /* -1: no TTL, -2: gone */
} snapshot_t;

typedef struct {
    snapshot_t *v; /* sorted by component, then instance */
    size_t n;
} snapshots_t;

/* Every snapshot (up to SNAPSHOTS_MAX). 0, or -1 with the reason in err. */
int snapshots_read(redisContext *c, snapshots_t *all, char *err, size_t errlen);
/* A second reading for rates: after interval_ms, and up to a second more while processes
 * have not published since the first. */
int snapshots_read_again(redisContext *c, const snapshots_t *first, snapshots_t *now,
                         long interval_ms, char *err, size_t errlen);
void snapshots_free(snapshots_t *all);
/* The same process's snapshot in all, or NULL. */
const snapshot_t *snapshots_find(const snapshots_t *all, const snapshot_t *s);

/* The number in a field (of a snapshot, or of an object inside one), or dflt. */
long long snapshot_num(const json_t *fields, const char *name, long long dflt);
/* 1 when it carries no time or is older than SNAPSHOT_STALE_MS. */
int snapshot_stale(const snapshot_t *s, long long now_ms);
/* Rates per second of each counter between two readings of the same process; NULL when
 * the snapshot did not change (or the process restarted: counters went down). */
json_t *snapshot_rates(const snapshot_t *now, const snapshot_t *before);

#endif
