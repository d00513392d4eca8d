/* cli/up_ports.h — the TCP ports a farm on this machine listens on: its MCP endpoint and each
 * component's /metrics. A default the user did not ask for gives way to a free port when
 * something else (another farm, say) holds it, so a second `snakepit up` with default options
 * starts, and says where it is (the banner, ready.json); a port asked for by name (flag,
 * SNAKEPIT_* environment) is used as given, and a clash is then the component's error. Port 0
 * means "any free one", as before. */
#ifndef SP_UP_PORTS_H
#define SP_UP_PORTS_H
#include <stddef.h>

/* Ports left to the farm are picked in "LO-HI" (--port-range; "" for the default: 10000 up to
 * the kernel's ephemeral range). 0, or -1 with the reason. */
int up_ports_range(const char *spec, char *err, size_t errlen);
/* 1 when 127.0.0.1:port can be bound now. */
int up_port_free(long port);
/* A free loopback port, in the range when one was given, or -1. */
long up_port_any(void);
/* The port to listen on: any free one for 0; want when it is free or was asked for; else a
 * free one (said in the log). what names it there. */
long up_port_pick(long want, int asked, const char *what);
/* 1 when the option `name` was given as a flag (--name V, --name=V) or in the environment
 * (SNAKEPIT_NAME). */
int up_option_given(int argc, char **argv, const char *name);

#endif
