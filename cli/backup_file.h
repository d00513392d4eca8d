/* cli/backup_file.h — the file `snakepit backup` writes and `snakepit restore` reads.
 *
 *   "SNAKEPIT-BACKUP\n"                       magic
 *   one line of JSON, "\n"                    header: {"format": 1, "created_ms", "redis_version",
 *                                             "source" (the URL without its password), "match",
 *                                             "records" (were execution records included)}
 *   per key:  'K', type (u8), key length (u32), key, expires at (i64, Unix ms; 0: never),
 *             payload length (u32), payload   (Redis DUMP: value and encoding, RDB-versioned)
 *   'E', keys (u64), SHA-256 of every byte before it (32 bytes)
 *
 * Integers are big-endian. The payload is Redis's own DUMP format, so a value comes back
 * exactly (a hash's fields, a sorted set's scores, a stream's ids); RESTORE accepts it in the
 * same or a newer Redis. The trailer makes a truncated or damaged file detectable before a
 * single key is restored. Expiry is absolute, so a record restored a day later still expires
 * when it would have. */
#ifndef SP_BACKUP_FILE_H
#define SP_BACKUP_FILE_H
#include <stddef.h>
#include <stdint.h>

#define BACKUP_FORMAT      1
#define BACKUP_MAX_KEY     (64u * 1024)         /* snakepit's keys are far shorter */
#define BACKUP_MAX_PAYLOAD (512u * 1024 * 1024) /* Redis's own proto-max-bulk-len */
#define BACKUP_MAX_HEADER  4096

/* Redis types, as TYPE names them, in one byte. */
enum {
    BACKUP_STRING = 's',
    BACKUP_HASH = 'h',
    BACKUP_LIST = 'l',
    BACKUP_SET = 'S',
    BACKUP_ZSET = 'z',
    BACKUP_STREAM = 'x',
    BACKUP_OTHER = '?'
};

typedef struct {
    char type; /* BACKUP_* */
    char *key; /* owned by the writer's caller, or by the reader until next */
    size_t key_len;
    int64_t expire_at_ms; /* 0: no TTL */
    char *payload;
    size_t payload_len;
} backup_record_t;

typedef struct backup_writer backup_writer_t;
/* Writes into PATH.tmp (0600: the file holds API key hashes, code and snapshots), which
 * becomes PATH on close. NULL with the reason in err. */
backup_writer_t *backup_writer_open(const char *path, const char *header_json, char *err,
                                    size_t errlen);
int backup_writer_add(backup_writer_t *self, const backup_record_t *r, char *err, size_t errlen);
uint64_t backup_writer_count(const backup_writer_t *self);
/* Trailer, fsync, rename. 0, or -1 with the reason in err (the .tmp is removed). */
int backup_writer_close(backup_writer_t **self_p, char *err, size_t errlen);
/* Gives up: removes PATH.tmp. */
void backup_writer_abort(backup_writer_t **self_p);

typedef struct backup_reader backup_reader_t;
/* Opens and reads the magic and the header (JSON text into header). */
backup_reader_t *backup_reader_open(const char *path, char *header, size_t cap, char *err,
                                    size_t errlen);
/* 1 with the next record in r (valid until the next call), 0 at the end once the trailer's
 * count and checksum match what was read, -1 with the reason in err. */
int backup_reader_next(backup_reader_t *self, backup_record_t *r, char *err, size_t errlen);
void backup_reader_close(backup_reader_t **self_p);

#endif
