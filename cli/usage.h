/* cli/usage.h — `snakepit usage [TENANT] [--days N]`: what each tenant used per day, from the
 * hashes the front-ends keep (mcp-frontend/state/records.c):
 *
 *   sp:t:{tenant}:use:{yyyymmdd}   executions, status:{status} (one field per status seen),
 *                                  cpu_ms, wall_ms — days are UTC, by the job's creation time
 *
 * Only executions that went through an MCP front-end are counted there, as `snakepit run`'s
 * are (`snakepit run --broker` submits to the broker directly and leaves no record). */
#ifndef SP_USAGE_H
#define SP_USAGE_H

int usage_main(int argc, char **argv);

#endif
