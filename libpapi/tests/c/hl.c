/*
 * PAPI's high-level API as a PAPI user writes it: a region run three
 * times, each touching fresh pages (counted by getrusage too), with a read
 * inside, and a nested region. Prints `key value` lines; the report is
 * written at exit under PAPI_OUTPUT_DIRECTORY.
 */
#define _GNU_SOURCE
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static long faults_now(void) {
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_minflt + r.ru_majflt;
}

static void touch_fresh(long n) {
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(2);
#ifdef MADV_NOHUGEPAGE
    madvise(p, n * page, MADV_NOHUGEPAGE);
#endif
    for (long i = 0; i < n; i++) ((volatile char *)p)[i * page] = 1;
}

int main(void) {
    long total = 0;
    for (int i = 0; i < 3; i++) {
        if (PAPI_hl_region_begin("work") != PAPI_OK) return 3;
        long f0 = faults_now();
        touch_fresh(100 + i);
        if (PAPI_hl_read("work") != PAPI_OK) return 4;
        if (PAPI_hl_region_begin("inner") != PAPI_OK) return 5;
        touch_fresh(10);
        if (PAPI_hl_region_end("inner") != PAPI_OK) return 6;
        total += faults_now() - f0;
        if (PAPI_hl_region_end("work") != PAPI_OK) return 7;
    }
    printf("rusage_faults %ld\n", total);
    printf("end_unopened %d\n", PAPI_hl_region_end("never"));
    return 0;
}
