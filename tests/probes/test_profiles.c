/*
 * Unit tests of the strict JSON reader and the platform profiles:
 *   test_profiles NAME   runs one test (ctest: probes.unit.NAME)
 *   test_profiles --list names them
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_reader.h"
#include "profiles.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)
#define CHECKF(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static struct wsl_json *parse(const char *s, char *err, size_t errlen)
{
    return wsl_json_parse(s, strlen(s), err, errlen);
}

static int test_json_values(void)
{
    char err[200];
    struct wsl_json *v = parse(" {\"a\": [1, -2.5e3, 0, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\\\"\","
                               " \"o\": {}, \"e\": [] } \n", err, sizeof err);
    CHECKF(v, "%s", err);
    CHECK(v->type == WSL_JSON_OBJECT && v->count == 4);
    const struct wsl_json *a = wsl_json_get(v, "a");
    CHECK(a && a->type == WSL_JSON_ARRAY && a->count == 6);
    CHECK(a->items[0].type == WSL_JSON_NUMBER && a->items[0].number == 1);
    CHECK(a->items[1].number == -2500);
    CHECK(a->items[3].type == WSL_JSON_BOOL && a->items[3].boolean);
    CHECK(a->items[4].type == WSL_JSON_BOOL && !a->items[4].boolean);
    CHECK(a->items[5].type == WSL_JSON_NULL);
    const struct wsl_json *s = wsl_json_get(v, "s");
    CHECK(s && s->type == WSL_JSON_STRING);
    CHECKF(!strcmp(s->string, "x\xc3\xa9\xf0\x9f\x98\x80\n\""), "%s", s->string);
    CHECK(wsl_json_get(v, "o")->type == WSL_JSON_OBJECT && wsl_json_get(v, "o")->count == 0);
    CHECK(wsl_json_get(v, "e")->type == WSL_JSON_ARRAY && wsl_json_get(v, "e")->count == 0);
    CHECK(!wsl_json_get(v, "missing"));
    CHECK(!wsl_json_get(a, "a")); /* not an object */
    wsl_json_free(v);
    /* Raw UTF-8 passes through; a scalar on its own is a document. */
    v = parse("\"caf\xc3\xa9\"", err, sizeof err);
    CHECKF(v && !strcmp(v->string, "caf\xc3\xa9"), "%s", err);
    wsl_json_free(v);
    v = parse("123456789012", err, sizeof err);
    CHECK(v && v->number == 123456789012.0);
    wsl_json_free(v);
    return 0;
}

static int test_json_malformed(void)
{
    static const struct {
        const char *text;
        const char *reason; /* a part of the message */
    } bad[] = {
        {"", "expected a value"},
        {"   ", "expected a value"},
        {"{", "expected a key string"},
        {"{\"a\"}", "expected ':'"},
        {"{\"a\":}", "expected a value"},
        {"{\"a\":1,}", "expected a key string"},
        {"[1,]", "expected a value"},
        {"[1 2]", "expected ',' or ']'"},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
        {"{a:1}", "expected a key string"},
        {"[01]", "leading zero"},
        {"[+1]", "expected a value"},
        {"[1.]", "digit after '.'"},
        {"[.5]", "expected a value"},
        {"[1e]", "digit in the exponent"},
        {"[-]", "expected a digit"},
        {"[1e999]", "out of range"},
        {"[NaN]", "expected a value"},
        {"[Infinity]", "expected a value"},
        {"[tru]", "expected a value"},
        {"[nul", "expected a value"},
        {"\"abc", "unterminated string"},
        {"\"a\\", "unterminated string"},
        {"\"a\tb\"", "control character"},
        {"\"\\x\"", "bad escape"},
        {"\"\\u12G4\"", "bad \\u escape"},
        {"\"\\u12\"", "bad \\u escape"},
        {"\"\\ud83d\"", "high surrogate"},
        {"\"\\ud83d\\u0041\"", "high surrogate"},
        {"\"\\ude00\"", "lone low surrogate"},
        {"\"\\u0000\"", "\\u0000"},
        {"\"\xff\"", "invalid UTF-8"},
        {"\"\xc0\xaf\"", "invalid UTF-8"},          /* overlong '/' */
        {"\"\xed\xa0\x80\"", "invalid UTF-8"},      /* encoded surrogate */
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8"},  /* past U+10FFFF */
        {"\"\xe2\x82\"", "invalid UTF-8"},          /* cut short */
        {"{} {}", "unexpected data after"},
        {"[1] x", "unexpected data after"},
        {"// c\n{}", "expected a value"},
        {"{\"a\":1,\"b\":2,\"a\":3}", "duplicate key \"a\""},
        {"\xef\xbb\xbf{}", "expected a value"},     /* a byte-order mark is not JSON */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[200] = "untouched";
        struct wsl_json *v = parse(bad[i].text, err, sizeof err);
        CHECKF(!v, "accepted %s", bad[i].text);
        CHECKF(strstr(err, bad[i].reason) && !strncmp(err, "line ", 5), "input %zu: message '%s', want '%s'", i, err,
               bad[i].reason);
    }
    /* Where: line and column of the fault. */
    char err[200];
    CHECK(!parse("{\n  \"a\": 1,\n  \"b\" 2\n}", err, sizeof err));
    CHECKF(!strcmp(err, "line 3, column 7: expected ':', found '2'"), "%s", err);
    /* A NUL byte inside the given length is not whitespace. */
    CHECK(!wsl_json_parse("{}\0", 3, err, sizeof err) && strstr(err, "unexpected data"));
    /* No error buffer: still no crash. */
    CHECK(!wsl_json_parse("[", 1, NULL, 0));
    CHECK(!wsl_json_parse(NULL, 0, err, sizeof err));
    return 0;
}

static int test_json_depth(void)
{
    char err[200];
    size_t n = 100000;
    char *s = malloc(2 * n + 1);
    CHECK(s);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = 0;
    CHECK(!wsl_json_parse(s, 2 * n, err, sizeof err));
    CHECKF(strstr(err, "nested deeper than 64"), "%s", err);
    /* Exactly the limit parses. */
    size_t ok = WSL_JSON_MAX_DEPTH;
    memset(s, '[', ok);
    memset(s + ok, ']', ok);
    struct wsl_json *v = wsl_json_parse(s, 2 * ok, err, sizeof err);
    CHECKF(v, "%s", err);
    wsl_json_free(v);
    free(s);
    return 0;
}

static uint64_t rng_state = 7;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static const char sample_calibration[] =
    "{\n"
    "  \"schema\": 1, \"platform\": \"wsl2\", \"tool\": \"wslshim-probe\",\n"
    "  \"machine\": {\"gpu\": \"NVIDIA H200\", \"wsl\": true},\n"
    "  \"launch_ns\": 7000, \"memcpy_ns\": 6100.5, \"sync_ns\": 12000, \"alloc_ns\": 90000, \"free_ns\": 30000,\n"
    "  \"launch\": {\"async\": {\"median_ns\": 7000}, \"with_sync\": {\"median_ns\": 21000, \"p10_ns\": 20000}},\n"
    "  \"event\": {\"record\": {\"median_ns\": 900}, \"query\": {\"median_ns\": 400}},\n"
    "  \"graph\": {\"kernels\": 100, \"per_kernel_ns\": 800},\n"
    "  \"pool_alloc\": {\"bytes\": 1048576, \"alloc\": {\"median_ns\": 1500}, \"free\": {\"median_ns\": 1200}},\n"
    "  \"pinned\": {\"alloc_1mib\": {\"median_ns\": 300000}, \"max_bytes\": 1073741824, \"limited_by\": \"driver\"},\n"
    "  \"alloc_by_size\": [\n"
    "    {\"bytes\": 1048576, \"alloc\": {\"median_ns\": 90000}, \"free\": {\"median_ns\": 30000}},\n"
    "    {\"bytes\": 1073741824, \"alloc\": {\"median_ns\": 900000}, \"free\": {\"median_ns\": 300000}}],\n"
    "  \"bandwidth\": [{\"direction\": \"htod\", \"host\": \"pinned\", \"bytes\": 67108864, \"bytes_per_s\": 2.0e10},\n"
    "                {\"direction\": \"dtoh\", \"host\": \"pageable\", \"bytes\": 67108864, \"bytes_per_s\": 5e9}],\n"
    "  \"file\": {\"by_fs\": {\"9p\": {\"kind\": \"windows_drive\", \"stat\": {\"median_ns\": 950000},\n"
    "      \"open_read_close\": {\"median_ns\": 2000000},\n"
    "      \"seq_read\": {\"cold_bytes_per_s\": null, \"warm_bytes_per_s\": 3.3e8}}}},\n"
    "  \"future_key\": [1, {\"x\": null}]\n"
    "}\n";

/* Random mutations of a valid document: never a crash, always a verdict. */
static int test_json_fuzz(void)
{
    size_t n = strlen(sample_calibration);
    char *buf = malloc(n + 64);
    CHECK(buf);
    static const char alphabet[] = "{}[]\",:\\u0123456789eE+-. \ntrufalsn\x80\xff\xc3";
    unsigned accepted = 0, rejected = 0;
    for (int round = 0; round < 20000; round++) {
        memcpy(buf, sample_calibration, n);
        size_t len = n;
        int edits = 1 + (int)(rng() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = rng() % len;
            switch (rng() % 3) {
            case 0: buf[at] = alphabet[rng() % (sizeof alphabet - 1)]; break;
            case 1: len = at + 1; break;                                       /* truncate */
            case 2: memmove(buf + at, buf + at + 1, len - at - 1), len--; break; /* delete */
            }
            if (!len)
                len = 1;
        }
        char err[200];
        struct wsl_json *v = wsl_json_parse(buf, len, err, sizeof err);
        if (v) {
            accepted++;
            wsl_json_free(v);
        } else {
            CHECK(!strncmp(err, "line ", 5));
            rejected++;
        }
        struct wsl_profile p;
        char perr[300] = "";
        if (wsl_profile_parse(buf, len, "fuzz.json", &p, perr, sizeof perr) != 0)
            CHECKF(!strncmp(perr, "fuzz.json: ", 11), "%s", perr);
    }
    CHECK(accepted > 0 && rejected > 0);
    free(buf);
    return 0;
}

static int test_profile_builtin(void)
{
    struct wsl_profile p;
    char err[256];
    CHECKF(wsl_profile_load("native", &p, err, sizeof err) == 0, "%s", err);
    CHECK(!strcmp(p.platform, "native") && !strcmp(p.origin, "built-in"));
    CHECK(p.launch_ns.value >= 4190 && p.launch_ns.value <= 4250 && p.launch_ns.src && strstr(p.launch_ns.src, "H200"));
    CHECK(p.sync_ns.value >= 1630 && p.sync_ns.value <= 1680);
    CHECK(!wsl_figure_known(p.memcpy_ns) && !p.memcpy_ns.src); /* nothing published: unknown, never invented */
    /* Pairs: exact at the measured sizes, monotonic in between. */
    double a1 = wsl_profile_alloc_free_ns(&p, 1 << 20), a64 = wsl_profile_alloc_free_ns(&p, 64 << 20);
    double a1g = wsl_profile_alloc_free_ns(&p, 1ull << 30), a8 = wsl_profile_alloc_free_ns(&p, 8 << 20);
    CHECK(a1 >= 75000 && a1 <= 80000 && a64 >= 126000 && a64 <= 137000 && a1g >= 772000 && a1g <= 781000);
    CHECK(a8 > a1 && a8 < a64);
    CHECK(wsl_profile_alloc_free_ns(&p, 4096) == a1 && wsl_profile_alloc_free_ns(&p, 8ull << 30) == a1g);

    CHECKF(wsl_profile_load("wsl2", &p, err, sizeof err) == 0, "%s", err);
    CHECK(!strcmp(p.platform, "wsl2"));
    CHECK(wsl_figure_known(p.launch_ns) && strstr(p.launch_ns.src, "kokkos"));
    CHECK(!wsl_figure_known(p.sync_ns) && !wsl_figure_known(p.alloc_ns));
    CHECK(wsl_profile_alloc_free_ns(&p, 1 << 20) < 0);
    CHECK(p.pinned_max_bytes.value == 512.0 * 1024 * 1024);
    const struct wsl_profile_fs *ext4 = wsl_profile_fs_find(&p, "ext4"), *drv = wsl_profile_fs_find(&p, "9p");
    CHECK(ext4 && drv && !strcmp(drv->kind, "windows_drive"));
    CHECK(drv->stat_ns.value > 500 * ext4->stat_ns.value);
    CHECK(drv->read_bytes_per_s.value < ext4->read_bytes_per_s.value);
    CHECK(!wsl_profile_fs_find(&p, "xfs"));

    CHECK(wsl_profile_load("wsl3", &p, err, sizeof err) == -1);
    CHECKF(strstr(err, "unknown profile 'wsl3'") && strstr(err, "native, wsl2"), "%s", err);
    CHECK(wsl_profile_load("", &p, err, sizeof err) == -1);
    return 0;
}

static int test_profile_calibration(void)
{
    struct wsl_profile p;
    char err[256];
    CHECKF(wsl_profile_parse(sample_calibration, strlen(sample_calibration), "cal.json", &p, err, sizeof err) == 0,
           "%s", err);
    CHECK(!strcmp(p.platform, "wsl2") && !strcmp(p.origin, "cal.json") && !strcmp(p.gpu, "NVIDIA H200"));
    CHECK(p.launch_ns.value == 7000 && p.memcpy_ns.value == 6100.5 && p.sync_ns.value == 12000);
    CHECK(p.alloc_ns.value == 90000 && p.free_ns.value == 30000 && !strcmp(p.alloc_ns.src, "probe"));
    CHECK(p.launch_sync_ns.value == 21000 && p.graph_kernel_ns.value == 800);
    CHECK(p.event_record_ns.value == 900 && p.event_query_ns.value == 400);
    CHECK(p.pool_alloc_ns.value == 1500 && p.pool_free_ns.value == 1200);
    CHECK(p.pinned_alloc_ns.value == 300000 && p.pinned_max_bytes.value == 1073741824.0);
    CHECK(p.alloc_count == 2 && p.alloc[1].bytes == 1ull << 30 && p.alloc[1].alloc_free_ns.value == 1200000);
    CHECK(fabs(wsl_profile_alloc_free_ns(&p, 32 << 20) - (120000 + 0.5 * (1200000 - 120000))) < 1e-6);
    CHECK(p.htod_pinned_bytes_per_s.value == 2e10 && p.dtoh_pageable_bytes_per_s.value == 5e9);
    CHECK(!wsl_figure_known(p.dtoh_pinned_bytes_per_s));
    const struct wsl_profile_fs *f = wsl_profile_fs_find(&p, "9p");
    CHECK(f && !strcmp(f->kind, "windows_drive") && f->stat_ns.value == 950000 &&
          f->open_read_close_ns.value == 2000000 && f->read_bytes_per_s.value == 3.3e8);

    /* Through a file, with a path. */
    char path[] = "/tmp/wslshim-profile-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, sample_calibration, strlen(sample_calibration)) == (ssize_t)strlen(sample_calibration));
    close(fd);
    int rc = wsl_profile_load(path, &p, err, sizeof err);
    unlink(path);
    CHECKF(rc == 0 && p.launch_ns.value == 7000 && !strcmp(p.origin, path), "%s", err);
    CHECK(wsl_profile_load("/nonexistent/cal.json", &p, err, sizeof err) == -1);
    CHECKF(strstr(err, "/nonexistent/cal.json: No such file"), "%s", err);
    CHECK(wsl_profile_load("/tmp", &p, err, sizeof err) == -1 && strstr(err, "not a regular file"));
    CHECK(wsl_profile_load("missing.json", &p, err, sizeof err) == -1 && strstr(err, "missing.json"));
    return 0;
}

static int test_profile_rejects(void)
{
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"[1]", "a JSON object, found array"},
        {"{\"schema\": 2, \"platform\": \"x\"}", "schema 1"},
        {"{\"platform\": \"x\"}", "schema 1"},
        {"{\"schema\": 1}", "\"platform\" must be"},
        {"{\"schema\": 1, \"platform\": \"\"}", "\"platform\" must be"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 1, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1}",
         "\"free_ns\" must be a number"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": \"5\", \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1}", "\"launch_ns\" must be a number"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": -5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1}", "cannot be negative"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"launch\": 3}", "\"launch\": expected object, found number"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"event\": {\"record\": {\"median_ns\": true}}}",
         "\"event.record.median_ns\": expected number, found boolean"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"alloc_by_size\": [{\"bytes\": 2}, {\"bytes\": 1}]}", "sizes must increase"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"alloc_by_size\": [{\"bytes\": 1.5}]}", "whole number of bytes"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"bandwidth\": [{\"direction\": \"up\", \"host\": \"pinned\"}]}", "direction must be"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5, \"memcpy_ns\": 1, \"sync_ns\": 1, \"alloc_ns\": 1,"
         " \"free_ns\": 1, \"file\": {\"by_fs\": {\"ext4\": []}}}", "\"file.by_fs.ext4\": expected object"},
        {"{\"schema\": 1, \"platform\": \"x\", \"launch_ns\": 5,", "not valid JSON: line 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct wsl_profile p;
        char err[300] = "";
        CHECKF(wsl_profile_parse(bad[i].text, strlen(bad[i].text), "c.json", &p, err, sizeof err) == -1, "accepted %zu",
               i);
        CHECKF(!strncmp(err, "c.json: ", 8) && strstr(err, bad[i].reason), "case %zu: '%s', want '%s'", i, err,
               bad[i].reason);
    }
    /* null for the five means not measured (wslshim-probe --no-gpu). */
    const char *nogpu = "{\"schema\": 1, \"platform\": \"native\", \"launch_ns\": null, \"memcpy_ns\": null,"
                        " \"sync_ns\": null, \"alloc_ns\": null, \"free_ns\": null}";
    struct wsl_profile p;
    char err[300];
    CHECKF(wsl_profile_parse(nogpu, strlen(nogpu), "n.json", &p, err, sizeof err) == 0, "%s", err);
    CHECK(!wsl_figure_known(p.launch_ns) && !wsl_figure_known(p.free_ns));
    return 0;
}

#define TESTS(X) X(json_values) X(json_malformed) X(json_depth) X(json_fuzz) X(profile_builtin) \
    X(profile_calibration) X(profile_rejects)

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
#define ENTRY(name) {#name, test_##name},
    TESTS(ENTRY)
#undef ENTRY
};

/* --load NAME_OR_PATH: the profile as the loader sees it, as JSON (null: unknown). */
static void print_figure(const char *key, struct wsl_figure f, const char *sep)
{
    if (wsl_figure_known(f))
        printf("\"%s\": %.17g%s", key, f.value, sep);
    else
        printf("\"%s\": null%s", key, sep);
}

static int load_and_print(const char *name)
{
    struct wsl_profile p;
    char err[512];
    if (wsl_profile_load(name, &p, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    printf("{\"platform\": \"%s\", \"gpu\": \"%s\", ", p.platform, p.gpu);
#define F(x) print_figure(#x, p.x, ", ");
    F(launch_ns) F(memcpy_ns) F(sync_ns) F(alloc_ns) F(free_ns) F(launch_sync_ns) F(graph_kernel_ns)
    F(event_record_ns) F(event_query_ns) F(pool_alloc_ns) F(pool_free_ns) F(pinned_alloc_ns) F(pinned_max_bytes)
    F(htod_pinned_bytes_per_s) F(dtoh_pinned_bytes_per_s) F(htod_pageable_bytes_per_s) F(dtoh_pageable_bytes_per_s)
#undef F
    printf("\"alloc_free_1mib_ns\": %.17g, \"alloc_sizes\": %zu, \"fs\": {", wsl_profile_alloc_free_ns(&p, 1 << 20),
           p.alloc_count);
    for (size_t i = 0; i < p.fs_count; i++) {
        printf("\"%s\": {\"kind\": \"%s\", ", p.fs[i].fstype, p.fs[i].kind);
        print_figure("stat_ns", p.fs[i].stat_ns, ", ");
        print_figure("open_read_close_ns", p.fs[i].open_read_close_ns, ", ");
        print_figure("read_bytes_per_s", p.fs[i].read_bytes_per_s, "");
        printf("}%s", i + 1 < p.fs_count ? ", " : "");
    }
    printf("}}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--load"))
        return load_and_print(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
            puts(tests[i].name);
        return 0;
    }
    int failed = 0, ran = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc == 2 && strcmp(argv[1], "all") && strcmp(argv[1], tests[i].name))
            continue;
        ran++;
        if (tests[i].fn()) {
            fprintf(stderr, "FAIL %s\n", tests[i].name);
            failed++;
        }
    }
    if (!ran) {
        fprintf(stderr, "test_profiles: no test named %s\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    return failed ? 1 : 0;
}
