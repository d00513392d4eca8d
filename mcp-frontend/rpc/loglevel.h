/* mcp-frontend/rpc/loglevel.h — MCP's logging levels (RFC 5424 severities, MCP "Logging"), by name
 * and in order: a legacy session sets one with logging/setLevel, a 2026-07-28 request names
 * one in _meta["io.modelcontextprotocol/logLevel"]. Pure: the envelope decoder uses it. */
#ifndef SP_FE_LOGLEVEL_H
#define SP_FE_LOGLEVEL_H

enum {
    LOGLEVEL_DEBUG,
    LOGLEVEL_INFO,
    LOGLEVEL_NOTICE,
    LOGLEVEL_WARNING,
    LOGLEVEL_ERROR,
    LOGLEVEL_CRITICAL,
    LOGLEVEL_ALERT,
    LOGLEVEL_EMERGENCY,
    LOGLEVEL_NONE /* no messages at all: the default of both eras */
};

/* The name of a level, or NULL for LOGLEVEL_NONE and beyond. */
const char *loglevel_name(int level);
/* The level a name names, or -1. */
int loglevel_parse(const char *name);

#endif
