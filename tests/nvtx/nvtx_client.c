/*
 * An NVTX 3 client built from the headers alone (no library linked): known
 * numbers of nested push/pop ranges, wide and registered messages, domains,
 * start/end ranges ended on another thread, marks, ranges from several
 * threads, file reads inside a range, a forked child, a range left open and a
 * pop with nothing open. nvtx_check.py derives every expected count from the
 * arguments and compares them with the report.
 *
 *   nvtx_client N THREADS DATA_FILE READS READ_BYTES
 *
 * stdout: what the program saw (push/pop return values, whether the
 * environment names an injection library); identical with and without the shim.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

extern char **environ;

static int n_iter, n_threads;
static nvtxDomainHandle_t domain;

/* Push/pop return values seen, folded: the same values in the same order give the same sum. */
static pthread_mutex_t ret_lock = PTHREAD_MUTEX_INITIALIZER;
static long long ret_sum, ret_count;
static int ret_min = 1 << 30, ret_max = -(1 << 30);

static void seen(int v)
{
    pthread_mutex_lock(&ret_lock);
    ret_sum += v;
    ret_count++;
    if (v < ret_min)
        ret_min = v;
    if (v > ret_max)
        ret_max = v;
    pthread_mutex_unlock(&ret_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "worker thread");
    for (int i = 0; i < n_iter; i++) {
        seen(nvtxRangePushA("worker"));
        seen(nvtxRangePushA("worker_inner"));
        seen(nvtxRangePop());
        seen(nvtxRangePop());
    }
    return NULL;
}

struct ender_args {
    nvtxRangeId_t *ids, *dom_ids;
    int count;
};

static void *ender(void *arg)
{
    struct ender_args *a = arg;
    for (int i = 0; i < a->count; i++) {
        nvtxRangeEnd(a->ids[i]);
        nvtxDomainRangeEnd(domain, a->dom_ids[i]);
    }
    seen(nvtxRangePop()); /* nothing open on this thread: an unmatched pop */
    return NULL;
}

static nvtxEventAttributes_t attr_ascii(const char *msg, uint32_t category)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = category;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t h)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = h;
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: nvtx_client N THREADS DATA_FILE READS READ_BYTES\n");
        return 2;
    }
    n_iter = atoi(argv[1]);
    n_threads = atoi(argv[2]);
    const char *data = argv[3];
    int reads = atoi(argv[4]), read_bytes = atoi(argv[5]);

    int env_has = 0;
    for (char **e = environ; *e; e++)
        env_has |= !strncmp(*e, "NVTX_INJECTION64_PATH=", 22);

    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main thread");

    /* Nested push/pop. */
    for (int i = 0; i < n_iter; i++) {
        seen(nvtxRangePushA("outer"));
        for (int j = 0; j < 2; j++) {
            seen(nvtxRangePushA("inner"));
            seen(nvtxRangePop());
        }
        seen(nvtxRangePop());
    }
    /* Wide strings (UTF-32 on Linux), converted to UTF-8 by the shim. */
    for (int i = 0; i < n_iter; i++) {
        seen(nvtxRangePushW(L"wide_r\u00e4nge_\u2713"));
        seen(nvtxRangePop());
    }
    /* Attribute structures: an ASCII message with a category, a registered string. */
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(NULL, "registered");
    for (int i = 0; i < n_iter; i++) {
        nvtxEventAttributes_t a = attr_ascii("ex_ascii", 7);
        seen(nvtxRangePushEx(&a));
        seen(nvtxRangePop());
        nvtxEventAttributes_t r = attr_registered(reg);
        seen(nvtxRangePushEx(&r));
        seen(nvtxRangePop());
    }
    /* A domain: its own ranges, a wide registered string, and a pop that must
     * close the domain's range, not the default domain's one above it. */
    domain = nvtxDomainCreateA("mydomain");
    nvtxStringHandle_t dreg = nvtxDomainRegisterStringW(domain, L"dom_registered_wide");
    for (int i = 0; i < n_iter; i++) {
        nvtxEventAttributes_t a = attr_ascii("dom_range", 0);
        seen(nvtxDomainRangePushEx(domain, &a));
        seen(nvtxDomainRangePop(domain));
        nvtxEventAttributes_t r = attr_registered(dreg);
        seen(nvtxDomainRangePushEx(domain, &r));
        seen(nvtxDomainRangePop(domain));
    }
    {
        nvtxEventAttributes_t a = attr_ascii("dom_inner", 0);
        seen(nvtxRangePushA("interleave_outer"));
        seen(nvtxDomainRangePushEx(domain, &a));
        seen(nvtxRangePop());               /* closes interleave_outer */
        seen(nvtxDomainRangePop(domain));   /* closes dom_inner */
    }
    /* Marks. */
    for (int i = 0; i < n_iter; i++)
        nvtxMarkA("marker");
    nvtxMarkW(L"wide_mark");
    for (int i = 0; i < 3; i++) {
        nvtxEventAttributes_t a = attr_ascii("dom_mark", 0);
        nvtxDomainMarkEx(domain, &a);
    }
    /* Start/end ranges started here and ended on another thread. */
    struct ender_args ea = {calloc((size_t)n_iter, sizeof(nvtxRangeId_t)),
                            calloc((size_t)n_iter, sizeof(nvtxRangeId_t)), n_iter};
    for (int i = 0; i < n_iter; i++) {
        ea.ids[i] = nvtxRangeStartA("async");
        nvtxEventAttributes_t a = attr_ascii("dom_async", 0);
        ea.dom_ids[i] = nvtxDomainRangeStartEx(domain, &a);
    }
    pthread_t et;
    pthread_create(&et, NULL, ender, &ea);
    pthread_join(et, NULL);
    /* Ranges from several threads at once. */
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    for (int i = 0; i < n_threads; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < n_threads; i++)
        pthread_join(th[i], NULL);
    /* File reads inside a nested range. */
    int fd = open(data, O_RDONLY);
    if (fd < 0) {
        perror(data);
        return 1;
    }
    char *buf = malloc((size_t)read_bytes);
    long long got = 0;
    seen(nvtxRangePushA("io_outer"));
    seen(nvtxRangePushA("io_range"));
    for (int i = 0; i < reads; i++)
        got += pread(fd, buf, (size_t)read_bytes, 0);
    seen(nvtxRangePop());
    seen(nvtxRangePop());
    close(fd);
    /* A forked child names its ranges in its own trace. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 5; i++) {
            nvtxRangePushA("outer");
            nvtxRangePop();
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    /* Left open: closed at the end of the trace. */
    seen(nvtxRangePushA("unclosed"));

    printf("environ names an injection library: %d\n", env_has);
    printf("push/pop calls %lld, return values sum %lld min %d max %d\n", ret_count, ret_sum, ret_min, ret_max);
    printf("read %lld bytes; child exit %d\n", got, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(buf);
    free(th);
    free(ea.ids);
    free(ea.dom_ids);
    return 0;
}
