/* cli/up_ports.c — see up_ports.h. Checking a port and then letting a component bind it later
 * is a race another farm starting at the same moment could lose; the component then fails to
 * start, says so, and is restarted, which picks again — rare, loud, and harmless. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "up_ports.h"

/* Binds 127.0.0.1:port (0: any); the port bound, or -1. */
static long s_bind(long port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    long got = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return got;
}

int up_port_free(long port)
{
    return port > 0 && s_bind(port) == port;
}

long up_port_any(void)
{
    return s_bind(0);
}

long up_port_pick(long want, int asked, const char *what)
{
    if (want <= 0) return up_port_any();
    if (asked || up_port_free(want)) return want;
    long port = up_port_any();
    log_info("event=port_taken what=%s port=%ld instead=%ld", what, want, port);
    return port;
}

int up_option_given(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 &&
            (argv[i][2 + n] == '\0' || argv[i][2 + n] == '='))
            return 1;
    char env[80] = "SNAKEPIT_";
    for (size_t i = 0; i < n && 9 + i < sizeof env - 1; i++)
        env[9 + i] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
    env[9 + (n < sizeof env - 10 ? n : sizeof env - 10)] = '\0';
    const char *v = getenv(env);
    return v && *v;
}
