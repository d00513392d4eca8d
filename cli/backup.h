/* cli/backup.h — `snakepit backup FILE` and `snakepit restore FILE`: a farm's lasting state
 * (tenants and their quotas, API keys, usage, session records and snapshots, execution
 * records) copied out of its Redis into one file, and back into the same or another farm.
 *
 * Backup walks the keys with SCAN and takes each with DUMP and its TTL, while the farm runs:
 * every key is copied whole and exactly as it was at one instant (DUMP is atomic), though not
 * all keys at the same instant — a tenant added during the backup may be there without its
 * key. What is rebuilt within seconds is left out: each process's one-second metrics snapshot
 * (sp:metrics:*), the executors' package lists (sp:profiles) and rate-limit buckets (sp:rl:*);
 * --no-records leaves out the execution records and their indexes too.
 *
 * Restore reads the whole file once to check it (backup_file.h: count and SHA-256) before it
 * writes anything, then RESTOREs every key that has not expired since: a key the farm already
 * has is replaced by the backup's, except sets and sorted sets — the indexes (sp:tenants, a
 * tenant's records, sessions, snapshots) — which get the backup's members added, so a fresh
 * farm's own tenant stays listed beside the restored ones. */
#ifndef SP_BACKUP_H
#define SP_BACKUP_H
int backup_main(int argc, char **argv);
int restore_main(int argc, char **argv);
#endif
