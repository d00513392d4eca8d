/* cli/up_ports.c — see up_ports.h. Checking a port and then letting a component bind it later
 * is a race: a port picked is therefore below the kernel's ephemeral range, which outgoing
 * connections take theirs from, and at random, so that farms starting together seldom meet. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
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

/* The kernel's ephemeral range, from which it also gives outgoing connections their local port:
 * a port picked there and bound later by a component can meanwhile become any client's (a
 * Redis or ZeroMQ connection of this very farm): startup then failed, loudly, now and then. */
static void s_ephemeral(long *lo, long *hi)
{
    *lo = 32768, *hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (!f) return;
    long a, b;
    if (fscanf(f, "%ld %ld", &a, &b) == 2 && a > 0 && b >= a) *lo = a, *hi = b;
    fclose(f);
}

/* Every port this process has handed out, picked or asked for: none is bound yet when the next
 * is picked, and none may be picked twice (the MCP endpoint's port given by flag and a metrics
 * port picked in the same range met once). */
static long s_handed[16];
static size_t s_n_handed;

static int s_was_handed(long port)
{
    for (size_t k = 0; k < s_n_handed && k < 16; k++)
        if (s_handed[k] == port) return 1;
    return 0;
}

static long s_hand(long port)
{
    if (port > 0) s_handed[s_n_handed++ % 16] = port;
    return port;
}

static long s_range_lo, s_range_hi; /* --port-range; 0 0: the default */

int up_ports_range(const char *spec, char *err, size_t errlen)
{
    s_range_lo = s_range_hi = 0;
    if (!spec || !*spec) return 0;
    char *end;
    long lo = strtol(spec, &end, 10), hi = -1;
    if (end != spec && *end == '-') {
        const char *at = end + 1;
        hi = strtol(at, &end, 10);
        if (end == at) hi = -1;
    }
    if (hi < 0 || *end || lo < 1 || hi > 65535 || hi < lo) {
        snprintf(err, errlen, "--port-range %s: expected LO-HI, two ports with LO <= HI", spec);
        return -1;
    }
    s_range_lo = lo, s_range_hi = hi;
    return 0;
}

long up_port_any(void)
{
    /* a free port of --port-range, or below the ephemeral range (above 10000, clear of the
     * well-known ones); tried from a random one on, so that farms starting together seldom try
     * the same; with neither (an ephemeral range starting that low), any the kernel gives */
    long lo = s_range_lo, hi = s_range_hi;
    if (!hi) {
        s_ephemeral(&lo, &hi);
        hi = lo - 1, lo = 10000;
    }
    long span = hi - lo + 1;
    if (span <= 0) {
        long port = s_bind(0);
        return s_was_handed(port) ? -1 : s_hand(port);
    }
    static unsigned seed; /* one sequence for every pick of this process */
    if (!seed) seed = ((unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL)) | 1u;
    long start = (long)(rand_r(&seed) % (unsigned long)span);
    for (long i = 0; i < span; i++) {
        long port = lo + (start + i) % span;
        if (!s_was_handed(port) && s_bind(port) == port) return s_hand(port);
    }
    log_error("event=port_range_full range=%ld-%ld", lo, hi);
    return -1;
}

long up_port_pick(long want, int asked, const char *what)
{
    if (want <= 0) return up_port_any();
    if (asked || (!s_was_handed(want) && up_port_free(want))) return s_hand(want);
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
