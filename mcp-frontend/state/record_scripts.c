/* mcp-frontend/state/record_scripts.c — see record_scripts.h. Kept short: Redis runs them by SHA
 * (store_write_script), but every nested command is a command of its own in Redis's books and
 * CPU, so a job's one write does as few as it can. Keys a script names beyond KEYS (records
 * deleted by count) are fine outside Redis Cluster, which snakepit does not use. */
#include "record_scripts.h"

/* index(z, drop, created, id, ttl, keep): the id into a tenant's index; keep = 0 stops there.
 * Otherwise (every so many writes, records.c) entries past the age or the count leave it, their
 * records (and linked files, filestore.h) too when drop, and the index's TTL is renewed. */
#define LUA_INDEX                                                                                  \
    "local function index(z, drop, created, id, ttl, keep)\n"                                      \
    "  redis.call('ZADD', z, created, id)\n"                                                       \
    "  if keep <= 0 then return end\n"                                                             \
    "  redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. (created - ttl * 1000))\n"                 \
    "  local over = redis.call('ZCARD', z) - keep\n"                                               \
    "  if over > 0 then\n"                                                                         \
    "    if drop then\n"                                                                           \
    "      for _, old in ipairs(redis.call('ZRANGE', z, 0, over - 1)) do\n"                        \
    "        redis.call('DEL', 'sp:exec:' .. old, 'sp:exec:' .. old .. ':files')\n"                \
    "      end\n"                                                                                  \
    "    end\n"                                                                                    \
    "    redis.call('ZREMRANGEBYRANK', z, 0, over - 1)\n"                                          \
    "  end\n"                                                                                      \
    "  redis.call('EXPIRE', z, ttl)\n"                                                             \
    "end\n"

const char RECORD_SUBMIT_LUA[] =
    LUA_INDEX "local ttl, created, id, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], "
              "tonumber(ARGV[4])\n"
              "redis.call('HSET', KEYS[1], unpack(ARGV, 6))\n"
              "redis.call('HSETNX', KEYS[1], 'status', 'queued')\n"
              "redis.call('EXPIRE', KEYS[1], ttl)\n"
              "index(KEYS[2], true, created, id, ttl, keep)\n"
              "if ARGV[5] == '1' then index(KEYS[3], false, created, id, ttl, keep) end\n"
              "return 1\n";

/* HSET answers how many fields were new: the first time a final record is written, its final
 * fields are (finished_ms at least); a replay adds none. The usage counters are read and
 * written back in one HMGET and one HSET, not a HINCRBY each (the script is atomic). */
const char RECORD_FINISH_LUA[] =
    LUA_INDEX
    "local ttl, created, id, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], "
    "tonumber(ARGV[4])\n"
    "local new = redis.call('HSET', KEYS[1], unpack(ARGV, 11))\n"
    "redis.call('EXPIRE', KEYS[1], ttl)\n"
    "if KEYS[2] ~= '' then index(KEYS[2], true, created, id, ttl, keep) end\n"
    "if new == 0 then return 0 end\n"
    "local f = {'executions', 'status:' .. ARGV[5], 'cpu_ms', 'wall_ms'}\n"
    "local add = {1, 1, tonumber(ARGV[6]), tonumber(ARGV[7])}\n"
    "if ARGV[8] == '1' then\n" /* a session's cell, and the memory its session held */
    "  f[5] = 'cells'; f[6] = 'session_memory_mb_cells'; add[5] = 1; add[6] = tonumber(ARGV[9])\n"
    "end\n"
    "for i = 11, #ARGV - 1, 2 do\n" /* the network, counted like CPU: from the record's fields */
    "  local k = ARGV[i]\n"
    "  if k == 'egress_bytes_out' or k == 'egress_bytes_in' or k == 'egress_connections' or\n"
    "     k == 'egress_refused' then\n"
    "    f[#f + 1] = k; add[#add + 1] = tonumber(ARGV[i + 1]) or 0\n"
    "  end\n"
    "end\n"
    "local old, kv = redis.call('HMGET', KEYS[3], unpack(f)), {}\n"
    "for i = 1, #f do\n"
    "  kv[#kv + 1] = f[i]\n"
    "  kv[#kv + 1] = string.format('%d', (tonumber(old[i]) or 0) + add[i])\n"
    "end\n"
    "redis.call('HSET', KEYS[3], unpack(kv))\n"
    "if #KEYS > 4 then redis.call('DEL', unpack(KEYS, 5)) end\n"
    "if KEYS[4] ~= '' then\n"
    "  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[10], '*', 'id', id,\n"
    "             unpack(redis.call('HGETALL', KEYS[1])))\n"
    "end\n"
    "return 1\n";

const char RECORD_TASK_LUA[] =
    LUA_INDEX "local ttl, created, id, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], "
              "tonumber(ARGV[4])\n"
              "redis.call('HSET', KEYS[1], 'task', '1', 'task_ttl_ms', ARGV[5])\n"
              "if redis.call('HSETNX', KEYS[1], 'task_status', 'working') == 1 then\n"
              "  redis.call('HSET', KEYS[1], 'task_updated_ms', ARGV[6])\n"
              "end\n"
              "redis.call('EXPIRE', KEYS[1], ttl)\n"
              "index(KEYS[2], false, created, id, ttl, keep)\n"
              "return 1\n";

const char RECORD_TASK_STATUS_LUA[] =
    "local status = redis.call('HGET', KEYS[1], 'status')\n"
    "if status ~= 'queued' then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'task_status', ARGV[1], 'task_updated_ms', ARGV[2])\n"
    "return 1\n";
