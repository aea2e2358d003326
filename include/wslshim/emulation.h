/*
 * Latency emulation (docs/emulation.md): WSLSHIM_EMULATE=SPEC makes hooked
 * calls cost more, and `wslshim-report --project SPEC` replays a run with the
 * same added costs. This header is shared by the shim (which parses the SPEC
 * once at load: no allocation, libc's string functions only) and the
 * analyzer, so that both read a SPEC the same way.
 *
 * SPEC, one of:
 *   wsl2                  the built-in figures (docs/emulation.md: sources)
 *   FILE (has a '/' or ends in .json)
 *                         calibration JSON (docs/probes.md) with
 *                         "platform": "emulation": its launch_ns, sync_ns,
 *                         alloc_ns, free_ns, memcpy_ns are added costs
 *   KEY=+N[ns|us|ms],...  inline; KEY is launch, sync, alloc, free, copy
 *                         (alloc also sets free unless free is given);
 *                         the '+' is optional; costs cannot be negative
 */
#ifndef WSLSHIM_EMULATION_H
#define WSLSHIM_EMULATION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wslshim/trace_format.h"

enum wsl_emu_family {
    WSL_EMU_LAUNCH = 0, /* kernel and graph launches (cuLaunchKernel*, cuGraphLaunch, cuLaunchHostFunc not) */
    WSL_EMU_SYNC,       /* stream, context and event synchronizations; blocking copies (with copy) */
    WSL_EMU_ALLOC,      /* device, pool, managed and pinned allocations */
    WSL_EMU_FREE,       /* their frees */
    WSL_EMU_COPY,       /* copy and memset submissions, blocking or not */
    WSL_EMU_FAMILIES
};

static inline const char *wsl_emu_family_name(unsigned f)
{
    static const char *const names[WSL_EMU_FAMILIES] = {"launch", "sync", "alloc", "free", "copy"};
    return f < WSL_EMU_FAMILIES ? names[f] : "?";
}

#define WSL_EMU_SPEC_MAX 512u

struct wsl_emu_spec {
    uint64_t ns[WSL_EMU_FAMILIES]; /* added host cost per call of each family */
    char text[WSL_EMU_SPEC_MAX];   /* the SPEC as given */
};

/* What a call of category `cat` gets added: a sum of families. Constant
 * folded when cat is a constant (the hooks). */
static inline __attribute__((always_inline)) uint64_t wsl_emu_cost_of(const uint64_t ns[WSL_EMU_FAMILIES],
                                                                      unsigned cat)
{
    switch (cat) {
    case WSL_CAT_LAUNCH: case WSL_CAT_GRAPH: return ns[WSL_EMU_LAUNCH];
    case WSL_CAT_SYNC_STREAM: case WSL_CAT_SYNC_CTX: case WSL_CAT_SYNC_EVENT: return ns[WSL_EMU_SYNC];
    case WSL_CAT_ALLOC: case WSL_CAT_ALLOC_MANAGED: case WSL_CAT_HOST_ALLOC: return ns[WSL_EMU_ALLOC];
    case WSL_CAT_FREE: case WSL_CAT_HOST_FREE: return ns[WSL_EMU_FREE];
    case WSL_CAT_COPY_ANY: case WSL_CAT_COPY_HTOD: case WSL_CAT_COPY_DTOH:
        return ns[WSL_EMU_COPY] + ns[WSL_EMU_SYNC];
    case WSL_CAT_COPY_ANY_ASYNC: case WSL_CAT_COPY_HTOD_ASYNC: case WSL_CAT_COPY_DTOH_ASYNC:
    case WSL_CAT_COPY_DTOD: case WSL_CAT_COPY_DTOD_ASYNC: case WSL_CAT_MEMSET: case WSL_CAT_MEMSET_ASYNC:
        return ns[WSL_EMU_COPY];
    default: return 0;
    }
}
/* Whether any SPEC can add to a category (a constant for the hooks). */
#define WSL_EMU_CAT(cat)                                                                                    \
    ((cat) == WSL_CAT_LAUNCH || (cat) == WSL_CAT_GRAPH || (cat) == WSL_CAT_SYNC_STREAM ||                   \
     (cat) == WSL_CAT_SYNC_CTX || (cat) == WSL_CAT_SYNC_EVENT || (cat) == WSL_CAT_ALLOC ||                  \
     (cat) == WSL_CAT_ALLOC_MANAGED || (cat) == WSL_CAT_HOST_ALLOC || (cat) == WSL_CAT_FREE ||              \
     (cat) == WSL_CAT_HOST_FREE || ((cat) >= WSL_CAT_COPY_ANY && (cat) <= WSL_CAT_MEMSET_ASYNC))

/* The built-in `wsl2` emulation, as deltas over native Linux. Only the launch
 * has a published WSL2 figure against a native one of the same order
 * (docs/emulation.md): ~8.25 us per launch on WSL2 (RTX 4080 S, a user
 * report) against 4.22 us measured natively on the H200 (facts: 4.19-4.25 us).
 * Synchronization and allocation deltas are not published: 0. */
#define WSL_EMU_WSL2_LAUNCH_NS 4000u

static inline int wsl_emu_fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a, b);
    return -1;
}

/* A cost "N", "+N", with an optional unit ns (default), us, ms; *out in ns. */
static inline int wsl_emu_cost_parse(const char *s, size_t n, uint64_t *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    const char *p = buf;
    if (*p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    double v = strtod(p, &end);
    double mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "ns"))
        mul = 1;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else
        return -1;
    v *= mul;
    if (!(v >= 0) || v > 1e10) /* at most 10 s a call */
        return -1;
    *out = (uint64_t)(v + 0.5);
    return 0;
}

/* A number after "key": in JSON text (top level or not: the calibration
 * format keeps these five at the top); 1 found, 0 absent or null, -1 bad. */
static inline int wsl_emu_json_number(const char *text, const char *key, double *out)
{
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p++ != ':')
        return -1;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!strncmp(p, "null", 4))
        return 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p || !(v >= 0) || v > 1e10)
        return -1;
    *out = v;
    return 1;
}

/* An emulation file's text (NUL-terminated): 0, or -1 with err. */
static inline int wsl_emu_parse_json(const char *text, const char *origin, struct wsl_emu_spec *s, char *err,
                                     size_t errlen)
{
    const char *p = strstr(text, "\"platform\"");
    if (p) {
        p += 10;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':')
            p++;
    }
    if (!p || strncmp(p, "\"emulation\"", 11) != 0)
        return wsl_emu_fail(err, errlen, "%s: an emulation file has \"platform\": \"emulation\"%s", origin, "");
    static const char *const keys[WSL_EMU_FAMILIES] = {"launch_ns", "sync_ns", "alloc_ns", "free_ns",
                                                         "memcpy_ns"};
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++) {
        double v = 0;
        int got = wsl_emu_json_number(text, keys[f], &v);
        if (got < 0)
            return wsl_emu_fail(err, errlen, "%s: \"%s\": expected a cost in ns (a number >= 0, or null)", origin,
                                keys[f]);
        s->ns[f] = got ? (uint64_t)(v + 0.5) : 0;
    }
    return 0;
}

/* Whether SPEC names a file rather than inline costs or a built-in name. */
static inline int wsl_emu_spec_is_file(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '=') == NULL &&
           (strchr(spec, '/') != NULL || (n > 5 && !strcmp(spec + n - 5, ".json")));
}

/* Whether SPEC is inline costs (KEY=COST,...). */
static inline int wsl_emu_spec_is_inline(const char *spec) { return strchr(spec, '=') != NULL; }

/* Parses a built-in name or inline SPEC (files: the caller reads the text and
 * calls wsl_emu_parse_json). 0, or -1 with a one-line reason in err. */
static inline int wsl_emu_parse(const char *spec, struct wsl_emu_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (strlen(spec) >= sizeof s->text)
        return wsl_emu_fail(err, errlen, "emulation SPEC is longer than %s bytes%s", "511", "");
    strcpy(s->text, spec);
    if (!strcmp(spec, "wsl2")) {
        s->ns[WSL_EMU_LAUNCH] = WSL_EMU_WSL2_LAUNCH_NS;
        return 0;
    }
    if (!wsl_emu_spec_is_inline(spec))
        return wsl_emu_fail(err, errlen, "emulation SPEC '%.120s': expected wsl2, a file, or KEY=+COST,...%s", spec, "");
    int free_given = 0;
    const char *p = spec;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        char item[128];
        snprintf(item, sizeof item, "%.*s", (int)(n < 120 ? n : 120), p);
        if (!eq)
            return wsl_emu_fail(err, errlen, "emulation SPEC: '%s' is not KEY=COST%s", item, "");
        size_t kn = (size_t)(eq - p);
        if (kn >= 3 && !strncmp(p, "fs:", 3))
            return wsl_emu_fail(err, errlen,
                                "emulation SPEC: '%s': file-system emulation (fs:PATH=TYPE) is not implemented yet%s",
                                item, "");
        int fam = -1;
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            if (strlen(wsl_emu_family_name(f)) == kn && !strncmp(p, wsl_emu_family_name(f), kn))
                fam = (int)f;
        if (fam < 0)
            return wsl_emu_fail(err, errlen,
                                "emulation SPEC: unknown key in '%s' (expected launch, sync, alloc, free, copy)%s",
                                item, "");
        uint64_t v;
        if (wsl_emu_cost_parse(eq + 1, n - kn - 1, &v) != 0)
            return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': expected a cost such as +8us, 500ns, 1ms%s",
                                item, "");
        s->ns[fam] = v;
        if (fam == WSL_EMU_FREE)
            free_given = 1;
        if (fam == WSL_EMU_ALLOC && !free_given)
            s->ns[WSL_EMU_FREE] = v;
        p = e ? e + 1 : p + n;
    }
    return 0;
}

/* ---- EMULATION chunk payload (trace format 1.8): this, then the SPEC text
 * (spec_size bytes, NUL-terminated). Written after PROCESS when the process
 * ran under WSLSHIM_EMULATE. */
struct wsl_emulation_info {
    uint32_t families;             /* entries of ns that follow: WSL_EMU_FAMILIES when written */
    uint32_t spec_size;            /* bytes of SPEC text after this struct, its NUL included */
    uint64_t ns[8];                /* added ns per call, by enum wsl_emu_family; unused entries 0 */
};
_Static_assert(sizeof(struct wsl_emulation_info) == 72, "emulation info is 72 bytes");
_Static_assert(WSL_EMU_FAMILIES <= 8, "families fit the chunk");

#endif /* WSLSHIM_EMULATION_H */
