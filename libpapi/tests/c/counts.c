/*
 * A PAPI program as a PAPI user writes one, judged against counts the
 * kernel keeps without pmc: getrusage's page faults of the thread (or of a
 * child process, which reports its own), fresh pages touched one by one.
 * Built against either papi.h; run as `counts MODE`, it prints
 * `key value` lines the Rust test compares.
 */
#define _GNU_SOURCE
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define CHECK(call) do { int r_ = (call); if (r_ != PAPI_OK) { \
    fprintf(stderr, "%s: %s (%d)\n", #call, PAPI_strerror(r_), r_); exit(2); } } while (0)

static long page;

/* n fresh pages, each touched once: n page faults (no huge pages). */
static char *fresh(long n) {
    char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
#ifdef MADV_NOHUGEPAGE
    madvise(p, n * page, MADV_NOHUGEPAGE);
#endif
    return p;
}

static void touch(char *p, long n) {
    for (long i = 0; i < n; i++) ((volatile char *)p)[i * page] = 1;
}

static long faults_now(void) {
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_minflt + r.ru_majflt;
}

static int set_of(const char **names, int n) {
    int set = PAPI_NULL;
    CHECK(PAPI_create_eventset(&set));
    for (int i = 0; i < n; i++) CHECK(PAPI_add_named_event(set, names[i]));
    return set;
}

/* The faults counted between start and stop, and getrusage's inside that window. */
static void exact(long n) {
    const char *ev[] = {"perf::PAGE-FAULTS"};
    int set = set_of(ev, 1);
    long long v;
    for (int round = 0; round < 2; round++) {  /* the first round pages everything in */
        char *p = fresh(n);
        CHECK(PAPI_start(set));
        long f0 = faults_now();
        touch(p, n);
        long f1 = faults_now();
        CHECK(PAPI_stop(set, &v));
        if (round == 1) printf("papi %lld\nrusage %ld\ntouched %ld\n", v, f1 - f0, n);
    }
}

static int overflows;
static long long overflow_vector_or;
static void handler(int set, void *address, long long vector, void *context) {
    (void)set; (void)address; (void)context;
    overflows++;
    overflow_vector_or |= vector;
    int idx[4], k = 4;
    if (PAPI_get_overflow_event_index(set, vector, idx, &k) == PAPI_OK && k == 1)
        overflow_vector_or |= (long long)idx[0] << 8;
}

/* PAPI_overflow on page faults: one call per `threshold` faults. */
static void overflow(long n, int threshold) {
    const char *ev[] = {"perf::TASK-CLOCK", "perf::PAGE-FAULTS"};
    int set = set_of(ev, 2), state = 0;
    long long v[2];
    int code;
    CHECK(PAPI_event_name_to_code("perf::PAGE-FAULTS", &code));
    CHECK(PAPI_overflow(set, code, threshold, 0, handler));
    CHECK(PAPI_state(set, &state));
    char *p = fresh(n);
    CHECK(PAPI_start(set));
    touch(p, n);
    CHECK(PAPI_stop(set, v));
    printf("faults %lld\nthreshold %d\ncalls %d\nvector %lld\noverflowing %d\n", v[1], threshold,
           overflows, overflow_vector_or, (state & PAPI_OVERFLOWING) != 0);
}

/* A child, attached by pid, counts what it reports itself. */
static void attach(long n) {
    int go[2], done[2];
    if (pipe(go) || pipe(done)) exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        long d;
        close(go[1]);  /* the parent's end: its exit is then EOF here */
        close(done[0]);
        for (int round = 0; round < 2; round++) {  /* round 0 pages the child's code in */
            if (read(go[0], &c, 1) != 1) _exit(3);
            long f0 = faults_now();
            touch(fresh(n), round ? n : 1);
            d = faults_now() - f0;
            if (write(done[1], &d, sizeof d) != sizeof d) _exit(3);
        }
        if (read(go[0], &c, 1) != 1) _exit(3);
        _exit(0);
    }
    long d;
    close(go[0]);
    close(done[1]);
    if (write(go[1], "x", 1) != 1 || read(done[0], &d, sizeof d) != sizeof d) exit(2);
    int set = PAPI_NULL, state;
    long long v;
    CHECK(PAPI_create_eventset(&set));
    CHECK(PAPI_assign_eventset_component(set, 0));  /* PAPI_attach needs the component */
    CHECK(PAPI_attach(set, (unsigned long)pid));
    CHECK(PAPI_add_named_event(set, "perf::PAGE-FAULTS"));
    CHECK(PAPI_state(set, &state));
    CHECK(PAPI_start(set));
    if (write(go[1], "x", 1) != 1 || read(done[0], &d, sizeof d) != sizeof d) exit(2);
    CHECK(PAPI_stop(set, &v));
    if (write(go[1], "x", 1) != 1) exit(2);
    waitpid(pid, NULL, 0);
    CHECK(PAPI_detach(set));
    printf("papi %lld\nchild %ld\nattached %d\n", v, d, (state & PAPI_ATTACHED) != 0);
}

/* Reset, write and accumulate, as PAPI documents them. */
static void rw(void) {
    const char *ev[] = {"perf::PAGE-FAULTS", "perf::TASK-CLOCK"};
    int set = set_of(ev, 2);
    long long v[2], acc[2] = {1000, 0};
    char *p = fresh(64);
    touch(fresh(1), 1);
    CHECK(PAPI_start(set));
    touch(p, 10);
    CHECK(PAPI_read(set, v));
    printf("read %lld\n", v[0]);
    CHECK(PAPI_reset(set));
    touch(p + 10 * page, 5);
    CHECK(PAPI_read(set, v));
    printf("after_reset %lld\n", v[0]);
    v[0] = 100;
    CHECK(PAPI_write(set, v));
    touch(p + 15 * page, 3);
    CHECK(PAPI_read(set, v));
    printf("after_write %lld\n", v[0]);
    CHECK(PAPI_accum(set, acc));
    printf("accum %lld\n", acc[0]);
    touch(p + 18 * page, 2);
    CHECK(PAPI_stop(set, v));
    printf("stop %lld\n", v[0]);
    CHECK(PAPI_read(set, v));
    printf("read_stopped %lld\n", v[0]);
    printf("stop_again %d\n", PAPI_stop(set, v));
    printf("destroy_full %d\n", PAPI_destroy_eventset(&set));
}

/* Multiplexed software events count as unmultiplexed ones do. */
static void multiplex(long n) {
    CHECK(PAPI_multiplex_init());
    int set = PAPI_NULL;
    CHECK(PAPI_create_eventset(&set));
    CHECK(PAPI_assign_eventset_component(set, 0));
    CHECK(PAPI_set_multiplex(set));
    const char *ev[] = {"perf::PAGE-FAULTS", "perf::MINOR-FAULTS", "perf::TASK-CLOCK", "perf::CS"};
    for (int i = 0; i < 4; i++) CHECK(PAPI_add_named_event(set, ev[i]));
    long long v[4];
    char *p = fresh(n);
    CHECK(PAPI_start(set));
    long f0 = faults_now();
    touch(p, n);
    long f1 = faults_now();
    CHECK(PAPI_stop(set, v));
    printf("multiplexed %d\npage_faults %lld\nminor_faults %lld\nrusage %ld\n",
           PAPI_get_multiplex(set), v[0], v[1], f1 - f0);
}

static volatile double sink;
__attribute__((noinline)) static void busy(void) {
    double x = 1;
    for (long i = 0; i < 200000000L; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}
__attribute__((noinline)) static void busy_end(void) { sink = 0; }

/* PAPI_profil on task-clock: the samples fall in the busy loop. */
static void profile(void) {
    const char *ev[] = {"perf::TASK-CLOCK"};
    int set = set_of(ev, 1), code;
    CHECK(PAPI_event_name_to_code("perf::TASK-CLOCK", &code));
    unsigned long start = (unsigned long)&busy, end = (unsigned long)&busy_end;
    if (end <= start) end = start + 4096;
    unsigned len = (unsigned)(end - start);
    unsigned buckets = len / 2;  /* scale 0x10000: a bucket per 2 bytes */
    unsigned short *buf = calloc(buckets, sizeof *buf);
    CHECK(PAPI_profil(buf, buckets * sizeof *buf, (vptr_t)start, 0x10000, set, code,
                      1000000 /* 1 ms of CPU */, PAPI_PROFIL_POSIX | PAPI_PROFIL_BUCKET_16));
    long long v;
    CHECK(PAPI_start(set));
    busy();
    CHECK(PAPI_stop(set, &v));
    long hits = 0;
    for (unsigned i = 0; i < buckets; i++) hits += buf[i];
    printf("task_clock_ns %lld\nhits %ld\n", v, hits);
    CHECK(PAPI_profil(buf, buckets * sizeof *buf, (vptr_t)start, 0x10000, set, code, 0,
                      PAPI_PROFIL_POSIX));
}

int main(int argc, char **argv) {
    page = sysconf(_SC_PAGESIZE);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) { fprintf(stderr, "init\n"); return 2; }
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "exact")) exact(256);
    else if (!strcmp(mode, "overflow")) overflow(1000, 37);
    else if (!strcmp(mode, "attach")) attach(300);
    else if (!strcmp(mode, "rw")) rw();
    else if (!strcmp(mode, "multiplex")) multiplex(200);
    else if (!strcmp(mode, "profil")) profile();
    else { fprintf(stderr, "mode?\n"); return 2; }
    PAPI_shutdown();
    return 0;
}
