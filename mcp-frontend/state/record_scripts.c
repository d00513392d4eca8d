/* mcp-frontend/state/record_scripts.c — see record_scripts.h. Kept short: each is sent whole with
 * every record (EVAL, never EVALSHA: a replay may reach a Redis that never saw it), and Redis
 * caches the compiled script by its hash. Keys a script names beyond KEYS (records deleted by
 * count) are fine outside Redis Cluster, which snakepit does not use. */
#include "record_scripts.h"

/* index(z, drop, created, id, ttl, keep): the id into a tenant's index; entries past the age
 * or the count leave it, and their records (and linked files, filestore.h) too when drop. */
#define LUA_INDEX                                                                                  \
    "local function index(z, drop, created, id, ttl, keep)\n"                                      \
    "  redis.call('ZADD', z, created, id)\n"                                                       \
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

const char RECORD_FINISH_LUA[] =
    "local prev = redis.call('HGET', KEYS[1], 'status')\n"
    "local first = (not prev) or prev == 'queued'\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 7))\n"
    "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))\n"
    "if not first then return 0 end\n"
    "local use = KEYS[2]\n"
    "if redis.call('HINCRBY', use, 'executions', 1) == 1 and #KEYS > 3 then\n"
    "  redis.call('DEL', unpack(KEYS, 4))\n"
    "end\n"
    "redis.call('HINCRBY', use, 'status:' .. ARGV[2], 1)\n"
    "redis.call('HINCRBY', use, 'cpu_ms', ARGV[3])\n"
    "redis.call('HINCRBY', use, 'wall_ms', ARGV[4])\n"
    "local mem = redis.call('HGET', KEYS[1], 'session_memory_kb')\n"
    "if mem then\n" /* a session's cell (issue 12), and the memory its session held */
    "  redis.call('HINCRBY', use, 'cells', 1)\n"
    "  redis.call('HINCRBY', use, 'session_memory_mb_cells', math.floor(tonumber(mem) / 1024))\n"
    "end\n"
    "for _, f in ipairs({'egress_bytes_out', 'egress_bytes_in', 'egress_connections', "
    "'egress_refused'}) do\n" /* the network, counted like CPU */
    "  local v = redis.call('HGET', KEYS[1], f)\n"
    "  if v then redis.call('HINCRBY', use, f, v) end\n"
    "end\n"
    "if KEYS[3] ~= '' then\n"
    "  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'id', ARGV[6],\n"
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
