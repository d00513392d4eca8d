/* bench/forkcost.c — what this machine charges for the three things every fresh sandbox pays
 * before its first instruction of Python: a fork and an exit, the page tables of a process
 * with private memory, and the copy-on-write faults of the pages a child writes. `make bench`
 * prints them beside its results (the "machine's floor" line), because they, not snakepit's code, set the
 * floor of CPU per execution: on a 2-core KVM guest a small fork+exit was 0.22 ms and a
 * copy-on-write fault ~2–3 µs; on a guest whose page tables the hypervisor shadows (PVM), 0.7 ms
 * and ~14 µs, and a print(1) sandbox costs 10x the CPU (bench/README.md, fourth round).
 *
 *   forkcost [--rounds N]       one JSON line: small_fork_exit_ms, heap_fork_exit_ms (a process
 *                               with 64 MiB written, 4 KiB pages), cow_us_per_page (a child of
 *                               that process writing 256 of its pages, less the fork without)
 *
 * CPU, not wall: this process's and its reaped children's (getrusage), per round. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define HEAP_BYTES (64ul << 20)
#define COW_PAGES  256
#define PAGE       4096ul

static double s_ms(const struct rusage *r)
{
    return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e3 +
           (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e3;
}

/* This process's CPU and its reaped children's, in ms. */
static double s_cpu_ms(void)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return s_ms(&self) + s_ms(&kids);
}

/* CPU per fork + child writing `pages` pages of heap + exit + reap, over `rounds`. -1 when a
 * fork fails. */
static double s_round_ms(volatile char *heap, size_t pages, int rounds)
{
    double t0 = s_cpu_ms();
    for (int i = 0; i < rounds; i++) {
        pid_t pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
            for (size_t k = 0; k < pages; k++) heap[k * PAGE]++;
            _exit(0);
        }
        if (waitpid(pid, NULL, 0) != pid) return -1;
    }
    return (s_cpu_ms() - t0) / rounds;
}

int main(int argc, char **argv)
{
    int rounds = 200;
    static const struct option opts[] = {{"rounds", required_argument, NULL, 'r'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (o == 'r' && atoi(optarg) > 0) {
            rounds = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [--rounds N]  (CPU of fork+exit and of copy-on-write "
                            "faults on this machine, one JSON line)\n", argv[0]);
            return o == 'h' ? 0 : 2;
        }
    }
    double small = s_round_ms(NULL, 0, rounds);
    char *heap = mmap(NULL, HEAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (heap == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(heap, HEAP_BYTES, MADV_NOHUGEPAGE); /* 4 KiB entries, as most of a zygote's */
    memset(heap, 1, HEAP_BYTES);
    double big = s_round_ms(heap, 0, rounds);
    double cow = s_round_ms(heap, COW_PAGES, rounds);
    if (small < 0 || big < 0 || cow < 0) {
        perror("fork");
        return 1;
    }
    printf("{\"small_fork_exit_ms\":%.3f,\"heap_fork_exit_ms\":%.3f,\"heap_mib\":%lu,"
           "\"cow_us_per_page\":%.2f,\"rounds\":%d}\n",
           small, big, HEAP_BYTES >> 20, (cow - big) * 1e3 / COW_PAGES, rounds);
    return 0;
}
