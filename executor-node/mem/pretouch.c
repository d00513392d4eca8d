/* executor-node/mem/pretouch.c — see pretouch.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "pretouch.h"

#define MAX_RANGES   4096
#define PAGE         4096u
#define PM_PRESENT   (1ull << 63)
#define PM_EXCLUSIVE (1ull << 56)
#define MAX_MAPPING  (256ul << 20)

typedef struct {
    uint32_t      n;
    uint32_t      pages;
    touch_range_t ranges[MAX_RANGES];
} report_t;

/* The zygote's writable private mappings: the only places a copy-on-write fault can happen. */
static size_t s_writable(touch_range_t *out, size_t cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char   line[512];
    size_t n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char          perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3) continue;
        if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p') continue;
        if (strstr(line, "[stack]") || strstr(line, "[vvar]")) continue;
        /* Interpreter heaps are megabytes; a mapping this large is a reservation (ASan's
         * terabytes of shadow), which would take hours to scan page by page. */
        if (hi - lo > MAX_MAPPING) continue;
        out[n++] = (touch_range_t){lo, hi - lo};
    }
    fclose(f);
    return n;
}

/* In the probe, after its job: which pages of the zygote's mappings are now its own. */
static void s_report(const touch_range_t *maps, size_t n_maps, report_t *rep)
{
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    uint64_t entries[512];
    for (size_t m = 0; m < n_maps; m++) {
        uintptr_t lo = maps[m].start, hi = maps[m].start + maps[m].len;
        for (uintptr_t at = lo; at < hi;) {
            size_t  want = (hi - at) / PAGE < 512 ? (hi - at) / PAGE : 512;
            ssize_t got = pread(fd, entries, want * 8, (off_t)(at / PAGE) * 8);
            if (got <= 0) break;
            for (size_t i = 0; i < (size_t)got / 8; i++, at += PAGE) {
                if ((entries[i] & (PM_PRESENT | PM_EXCLUSIVE)) != (PM_PRESENT | PM_EXCLUSIVE)) continue;
                rep->pages++;
                touch_range_t *last = rep->n ? &rep->ranges[rep->n - 1] : NULL;
                if (last && last->start + last->len == at)
                    last->len += PAGE;
                else if (rep->n < MAX_RANGES)
                    rep->ranges[rep->n++] = (touch_range_t){at, PAGE};
            }
        }
    }
    close(fd);
}

int pretouch_record(pretouch_t *t, void (*probe)(void *arg), void *arg, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    touch_range_t *maps = xcalloc(MAX_RANGES, sizeof *maps);
    size_t         n_maps = s_writable(maps, MAX_RANGES);
    report_t      *rep = mmap(NULL, sizeof *rep, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!n_maps || rep == MAP_FAILED) {
        snprintf(err, errlen, "pretouch: no /proc/self/maps or no memory");
        free(maps);
        if (rep != MAP_FAILED) munmap(rep, sizeof *rep);
        return -1;
    }
    rep->n = rep->pages = 0;
    pid_t pid = fork();
    if (pid == 0) {
        probe(arg);
        s_report(maps, n_maps, rep);
        _exit(0);
    }
    free(maps);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "pretouch: the probe failed (%s)", pid < 0 ? strerror(errno) : "exit");
        munmap(rep, sizeof *rep);
        return -1;
    }
    t->n = rep->n < MAX_RANGES ? rep->n : MAX_RANGES;
    t->pages = rep->pages;
    t->ranges = xcalloc(t->n ? t->n : 1, sizeof *t->ranges);
    memcpy(t->ranges, rep->ranges, t->n * sizeof *t->ranges);
    munmap(rep, sizeof *rep);
    return 0;
}

/* A range the zygote has since unmapped (a freed arena, a malloc block) may hold something
 * read-only now, or nothing: the write faults, and the handler skips that range. */
static sigjmp_buf s_skip;
static void s_on_fault(int sig)
{
    (void)sig;
    siglongjmp(s_skip, 1);
}

/* Not instrumented: under AddressSanitizer a recorded page may hold a redzone or freed bytes,
 * which this write leaves as they were. */
__attribute__((no_sanitize_address)) void pretouch_apply(const pretouch_t *t)
{
    /* One locked read-modify-write per page: it faults once, as a write (a load then a store
     * would first map the zero page where the zygote has none). Measured against one
     * MADV_POPULATE_WRITE per range: 0.14 ms less CPU per print(1) job (the syscall's page
     * walk and LRU drain per range cost more than the fault entry). */
    struct sigaction sa = {.sa_handler = s_on_fault, .sa_flags = SA_NODEFER}, old_segv, old_bus;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) < 0) return;
    if (sigaction(SIGBUS, &sa, &old_bus) < 0) {
        sigaction(SIGSEGV, &old_segv, NULL);
        return;
    }
    volatile size_t i = 0;
    if (sigsetjmp(s_skip, 0)) i++; /* range i faulted: on to the next */
    for (; i < t->n; i++)
        for (uintptr_t at = t->ranges[i].start; at < t->ranges[i].start + t->ranges[i].len; at += PAGE)
            __atomic_fetch_or((uint64_t *)at, 0, __ATOMIC_RELAXED);
    sigaction(SIGBUS, &old_bus, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
}

void pretouch_free(pretouch_t *t)
{
    free(t->ranges);
    memset(t, 0, sizeof *t);
}
