/*
 * NVTX ranges, marks and domains, recorded through the NVTX injection
 * interface (docs/nvtx.md).
 *
 * How an NVTX 3 client finds a tool (nvtx3/nvtxDetail/nvtxInit.h, load
 * sequence version 2): on its first NVTX call it reads getenv
 * ("NVTX_INJECTION64_PATH"), dlopens that path and calls the library's
 * InitializeInjectionNvtx2, which fills the client's function tables. The
 * other two routes do not reach a preloaded library: the "pre-injected"
 * lookup is compiled out, and the static-injection pointer
 * InitializeInjectionNvtx2_fnptr is a hidden weak symbol of each client (it
 * sits inside the headers' `#pragma GCC visibility push(hidden)`), bound
 * inside the client at link time. So the shim answers that one getenv: when
 * the environment has no NVTX_INJECTION64_PATH, the shim's getenv returns the
 * shim's own path. environ is not touched (os.environ, /proc/self/environ and
 * child processes see what they saw); a value the user set wins, and
 * WSLSHIM_NVTX=0 turns the answer off. The dlopen of that path finds the
 * already loaded shim. libnvToolsExt.so.1 (the NVTX v2 library) loads tools
 * the same way.
 *
 * Each client (every executable or library compiled with the headers has its
 * own copy of NVTX) calls InitializeInjectionNvtx2 once; the tables are filled
 * the same way each time. Callbacks record one instant event into the calling
 * thread's ring. Names go once per thread into the string table: a small
 * per-thread cache maps a name's content hash to its string id, so a fresh
 * pointer with the same text (Python) costs a hash, not a copy. Registered
 * strings and domains are registry nodes that carry their hash.
 *
 * Return values: push and pop return what they return without a tool,
 * NVTX_NO_PUSH_POP_TRACKING, so a program's behaviour cannot depend on the
 * shim; range starts return a process-unique id (needed to match the end,
 * which may come from another thread).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "api_ids.h"
#include "shim_internal.h"

#define NVTX_NAME_MAX 1024u       /* bytes of a name kept (UTF-8, cut at a character) */
#define NVTX_REGISTRY_MAX_BYTES (64u << 20)

#if UINTPTR_MAX == 0xffffffffu
#define NVTX_ENV_NAME "NVTX_INJECTION32_PATH"
#else
#define NVTX_ENV_NAME "NVTX_INJECTION64_PATH"
#endif

/* ---- getenv: the one question that makes NVTX load the shim -------------------- */
/* Every question goes to libc's getenv (wsl_getenv, common/real.c); this one,
 * when libc has no answer, gets the shim's path. */

/* The path to answer, decided once: at load time, or by the first NVTX client
 * if one runs earlier (a linked library's constructor runs before the shim's).
 * Racing first callers each make a copy and publish one with a CAS: no lock,
 * no waiting on another thread (which might be holding the loader's lock). */
static char injection_off; /* the answer "none" */
static char *_Atomic injection_path;

static char *injection_answer(void)
{
    char *p = atomic_load_explicit(&injection_path, memory_order_acquire);
    if (WSL_LIKELY(p != NULL))
        return p == &injection_off ? NULL : p;
    int saved = errno;
    const char *off = wsl_getenv("WSLSHIM_NVTX");
    Dl_info info;
    char *mine = &injection_off;
    if (!(off && !strcmp(off, "0")) && dladdr((void *)injection_answer, &info) && info.dli_fname &&
        info.dli_fname[0]) {
        size_t n = strlen(info.dli_fname) + 1;
        char *copy = malloc(n);
        if (copy) {
            memcpy(copy, info.dli_fname, n);
            mine = copy;
        }
    }
    char *expect = NULL;
    if (!atomic_compare_exchange_strong_explicit(&injection_path, &expect, mine, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        if (mine != &injection_off)
            free(mine);
        mine = expect;
    }
    errno = saved;
    return mine == &injection_off ? NULL : mine;
}

__attribute__((constructor)) static void nvtx_hooks_init(void)
{
    wsl_tls_depth++;
    injection_answer();
    wsl_tls_depth--;
}

WSL_EXPORT char *getenv(const char *name)
{
    char *v = wsl_getenv(name);
    if (WSL_LIKELY(v != NULL) || name[0] != 'N' || strcmp(name, NVTX_ENV_NAME) != 0)
        return v;
    return injection_answer();
}

/* ---- names ----------------------------------------------------------------------- */

static inline uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h | 1;
}

/* Length of s cut to NVTX_NAME_MAX bytes, at a UTF-8 character boundary. */
static inline uint32_t name_length(const char *s)
{
    size_t n = strnlen(s, NVTX_NAME_MAX + 1);
    if (n > NVTX_NAME_MAX) {
        n = NVTX_NAME_MAX;
        while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    return (uint32_t)n;
}

/* A wide string (UTF-32 on Linux) as UTF-8 in out (NVTX_NAME_MAX + 1 bytes);
 * invalid code points become U+FFFD. Returns the length. */
static uint32_t wide_to_utf8(const wchar_t *w, char *out)
{
    uint32_t n = 0;
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            c = 0xfffd;
        unsigned len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n + len > NVTX_NAME_MAX)
            break;
        if (len == 1) {
            out[n++] = (char)c;
        } else if (len == 2) {
            out[n++] = (char)(0xc0 | c >> 6);
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else if (len == 3) {
            out[n++] = (char)(0xe0 | c >> 12);
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            out[n++] = (char)(0xf0 | c >> 18);
            out[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        }
    }
    out[n] = 0;
    return n;
}

/* The string id of a name in this process's trace: from the thread's cache,
 * or written once into the thread's string ring (marked as an NVTX name). */
static uint32_t name_id(struct wsl_thread *t, const char *s, uint32_t len, uint64_t hash)
{
    if (WSL_UNLIKELY(t->nvtx_gen != t->gen)) { /* a forked child's trace has none of the parent's names */
        memset(t->nvtx_names, 0, sizeof t->nvtx_names);
        t->nvtx_gen = t->gen;
    }
    struct wsl_nvtx_name_slot *slot = &t->nvtx_names[hash & (sizeof t->nvtx_names / sizeof t->nvtx_names[0] - 1)];
    if (WSL_LIKELY(slot->hash == hash && slot->len == len && slot->id))
        return slot->id;
    char buf[NVTX_NAME_MAX + 2];
    buf[0] = WSL_NVTX_NAME_MARK;
    memcpy(buf + 1, s, len);
    buf[len + 1] = 0;
    uint64_t dropped = atomic_load_explicit(&t->paths_dropped, memory_order_relaxed);
    uint32_t id = wsl_string_record(t, buf);
    if (atomic_load_explicit(&t->paths_dropped, memory_order_relaxed) == dropped) {
        slot->hash = hash; /* a name that found no room is tried again next time */
        slot->len = len;
        slot->id = id;
    }
    return id;
}

static inline uint32_t ascii_id(struct wsl_thread *t, const char *s)
{
    if (!s)
        return 0;
    uint32_t len = name_length(s);
    return name_id(t, s, len, name_hash(s, len));
}

static uint32_t wide_id(struct wsl_thread *t, const wchar_t *w)
{
    if (!w)
        return 0;
    char buf[NVTX_NAME_MAX + 1];
    uint32_t len = wide_to_utf8(w, buf);
    return name_id(t, buf, len, name_hash(buf, len));
}

/* ---- registered strings and domains: nodes that live as long as the process ---- */
struct nvtx_name {
    struct nvtx_name *next;
    uint64_t hash;
    uint32_t len;
    char text[];                /* NUL-terminated */
};

#define REGISTRY_BUCKETS 1024u
static struct nvtx_name *_Atomic registry[REGISTRY_BUCKETS];
static _Atomic size_t registry_bytes;

/* The node for this text; one is made the first time (two racing callers may
 * both make one: either is a valid handle). NULL past the memory cap. */
static struct nvtx_name *registry_get(const char *s, uint32_t len)
{
    uint64_t hash = name_hash(s, len);
    struct nvtx_name *_Atomic *bucket = &registry[hash & (REGISTRY_BUCKETS - 1)];
    struct nvtx_name *head = atomic_load_explicit(bucket, memory_order_acquire);
    for (struct nvtx_name *n = head; n; n = n->next)
        if (n->hash == hash && n->len == len && !memcmp(n->text, s, len))
            return n;
    size_t size = sizeof(struct nvtx_name) + len + 1;
    if (atomic_fetch_add(&registry_bytes, size) + size > NVTX_REGISTRY_MAX_BYTES)
        return NULL;
    int saved = errno;
    struct nvtx_name *n = malloc(size);
    errno = saved;
    if (!n)
        return NULL;
    n->hash = hash;
    n->len = len;
    memcpy(n->text, s, len);
    n->text[len] = 0;
    n->next = head;
    while (!atomic_compare_exchange_weak_explicit(bucket, &n->next, n, memory_order_release, memory_order_acquire))
        ;
    return n;
}

static struct nvtx_name *registry_get_ascii(const char *s)
{
    return s ? registry_get(s, name_length(s)) : NULL;
}

static struct nvtx_name *registry_get_wide(const wchar_t *w)
{
    if (!w)
        return NULL;
    char buf[NVTX_NAME_MAX + 1];
    uint32_t len = wide_to_utf8(w, buf);
    return registry_get(buf, len);
}

static inline uint32_t node_id(struct wsl_thread *t, const void *handle)
{
    const struct nvtx_name *n = handle;
    return n ? name_id(t, n->text, n->len, n->hash) : 0;
}

/* The message of an attribute structure, and its category. */
static uint32_t attr_id(struct wsl_thread *t, const nvtxEventAttributes_t *a, uint64_t *category)
{
    *category = 0;
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return 0;
    *category = a->category;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return ascii_id(t, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_id(t, a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return node_id(t, a->message.registered);
    default:
        return 0;
    }
}

/* ---- recording --------------------------------------------------------------------- */

/* The thread to record into, or NULL (inside the shim, or a thread that must not record). */
static inline __attribute__((always_inline)) struct wsl_thread *nvtx_enter(void)
{
    if (WSL_UNLIKELY(wsl_tls_depth))
        return NULL;
    struct wsl_thread *t = wsl_thread_get();
    if (WSL_LIKELY(t != NULL))
        wsl_tls_depth = 1;
    return t;
}

static inline __attribute__((always_inline)) void nvtx_record(struct wsl_thread *t, uint64_t now, unsigned api,
                                                              uint64_t domain, uint64_t a0, uint64_t a1,
                                                              uint64_t a2)
{
    if (WSL_UNLIKELY(atomic_load_explicit(&t->fold_used, memory_order_relaxed)))
        wsl_io_fold_cut(t); /* file calls folded so far happened before this */
    struct wsl_event *e = wsl_ring_reserve(t);
    if (WSL_LIKELY(e != NULL)) {
        e->t_start = now;
        e->t_end = now;
        e->api = (uint16_t)api;
        e->flags = 0;
        e->result = 0;
        e->stream = domain;
        e->a[0] = a0;
        e->a[1] = a1;
        e->a[2] = a2;
        e->a[3] = 0;
        wsl_ring_commit(t);
    }
    wsl_tls_depth = 0;
}

#define ID(sym) (WSL_NVTX_ID_##sym)

static _Atomic uint64_t next_range_id = 1;

/* ---- core ---- */
static void nvtx_mark_ex(const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks(), cat;
    uint32_t id = attr_id(t, a, &cat);
    nvtx_record(t, now, ID(nvtxMarkEx), 0, id, 0, cat);
}

static void nvtx_mark_a(const char *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks();
    nvtx_record(t, now, ID(nvtxMarkA), 0, ascii_id(t, msg), 0, 0);
}

static void nvtx_mark_w(const wchar_t *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks();
    nvtx_record(t, now, ID(nvtxMarkW), 0, wide_id(t, msg), 0, 0);
}

static nvtxRangeId_t range_start(unsigned api, uint64_t domain_id, uint32_t name, uint64_t cat, struct wsl_thread *t,
                                 uint64_t now)
{
    nvtxRangeId_t rid = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    nvtx_record(t, now, api, domain_id, name, rid, cat);
    return rid;
}

static nvtxRangeId_t nvtx_start_ex(const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    uint64_t now = wsl_ticks(), cat;
    uint32_t id = attr_id(t, a, &cat);
    return range_start(ID(nvtxRangeStartEx), 0, id, cat, t, now);
}

static nvtxRangeId_t nvtx_start_a(const char *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    uint64_t now = wsl_ticks();
    return range_start(ID(nvtxRangeStartA), 0, ascii_id(t, msg), 0, t, now);
}

static nvtxRangeId_t nvtx_start_w(const wchar_t *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    uint64_t now = wsl_ticks();
    return range_start(ID(nvtxRangeStartW), 0, wide_id(t, msg), 0, t, now);
}

static void nvtx_end(nvtxRangeId_t rid)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    nvtx_record(t, wsl_ticks(), ID(nvtxRangeEnd), 0, 0, rid, 0);
}

static int nvtx_push_ex(const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        uint64_t now = wsl_ticks(), cat;
        uint32_t id = attr_id(t, a, &cat);
        nvtx_record(t, now, ID(nvtxRangePushEx), 0, id, t->nvtx_depth++, cat);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int nvtx_push_a(const char *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        uint64_t now = wsl_ticks();
        nvtx_record(t, now, ID(nvtxRangePushA), 0, ascii_id(t, msg), t->nvtx_depth++, 0);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int nvtx_push_w(const wchar_t *msg)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        uint64_t now = wsl_ticks();
        nvtx_record(t, now, ID(nvtxRangePushW), 0, wide_id(t, msg), t->nvtx_depth++, 0);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int nvtx_pop(void)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        t->nvtx_depth -= t->nvtx_depth > 0;
        nvtx_record(t, wsl_ticks(), ID(nvtxRangePop), 0, 0, t->nvtx_depth, 0);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static void nvtx_name_thread_a(uint32_t tid, const char *name)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks();
    nvtx_record(t, now, ID(nvtxNameOsThreadA), 0, ascii_id(t, name), tid, 0);
}

static void nvtx_name_thread_w(uint32_t tid, const wchar_t *name)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks();
    nvtx_record(t, now, ID(nvtxNameOsThreadW), 0, wide_id(t, name), tid, 0);
}

/* ---- domains ---- */
static void nvtx_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks(), cat;
    uint32_t dom = node_id(t, d), id = attr_id(t, a, &cat);
    nvtx_record(t, now, ID(nvtxDomainMarkEx), dom, id, 0, cat);
}

static nvtxRangeId_t nvtx_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    uint64_t now = wsl_ticks(), cat;
    uint32_t dom = node_id(t, d), id = attr_id(t, a, &cat);
    return range_start(ID(nvtxDomainRangeStartEx), dom, id, cat, t, now);
}

static void nvtx_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t rid)
{
    struct wsl_thread *t = nvtx_enter();
    if (!t)
        return;
    uint64_t now = wsl_ticks();
    nvtx_record(t, now, ID(nvtxDomainRangeEnd), node_id(t, d), 0, rid, 0);
}

static int nvtx_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        uint64_t now = wsl_ticks(), cat;
        uint32_t dom = node_id(t, d), id = attr_id(t, a, &cat);
        nvtx_record(t, now, ID(nvtxDomainRangePushEx), dom, id, t->nvtx_depth++, cat);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int nvtx_domain_pop(nvtxDomainHandle_t d)
{
    struct wsl_thread *t = nvtx_enter();
    if (t) {
        uint64_t now = wsl_ticks();
        uint32_t dom = node_id(t, d);
        t->nvtx_depth -= t->nvtx_depth > 0;
        nvtx_record(t, now, ID(nvtxDomainRangePop), dom, 0, t->nvtx_depth, 0);
    }
    return NVTX_NO_PUSH_POP_TRACKING;
}

static nvtxStringHandle_t nvtx_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)registry_get_ascii(s);
}

static nvtxStringHandle_t nvtx_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return (nvtxStringHandle_t)registry_get_wide(s);
}

static nvtxDomainHandle_t nvtx_domain_create_a(const char *name)
{
    return (nvtxDomainHandle_t)registry_get_ascii(name);
}

static nvtxDomainHandle_t nvtx_domain_create_w(const wchar_t *name)
{
    return (nvtxDomainHandle_t)registry_get_wide(name);
}

/* Destroying a domain keeps its node: a handle used after destroy still names it. */
static void nvtx_domain_destroy(nvtxDomainHandle_t d) { (void)d; }

/* ---- the injection entry point --------------------------------------------------- */
#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static int fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const NvtxFunctionPointer *fns,
                       unsigned count)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (unsigned i = 1; i < size && i < count; i++)
        if (fns[i] && table[i])
            *table[i] = fns[i];
    return 1;
}

WSL_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    if (!get_export_table)
        return 0;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    static const NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {
        [NVTX_CBID_CORE_MarkEx] = FN(nvtx_mark_ex),
        [NVTX_CBID_CORE_MarkA] = FN(nvtx_mark_a),
        [NVTX_CBID_CORE_MarkW] = FN(nvtx_mark_w),
        [NVTX_CBID_CORE_RangeStartEx] = FN(nvtx_start_ex),
        [NVTX_CBID_CORE_RangeStartA] = FN(nvtx_start_a),
        [NVTX_CBID_CORE_RangeStartW] = FN(nvtx_start_w),
        [NVTX_CBID_CORE_RangeEnd] = FN(nvtx_end),
        [NVTX_CBID_CORE_RangePushEx] = FN(nvtx_push_ex),
        [NVTX_CBID_CORE_RangePushA] = FN(nvtx_push_a),
        [NVTX_CBID_CORE_RangePushW] = FN(nvtx_push_w),
        [NVTX_CBID_CORE_RangePop] = FN(nvtx_pop),
        [NVTX_CBID_CORE_NameOsThreadA] = FN(nvtx_name_thread_a),
        [NVTX_CBID_CORE_NameOsThreadW] = FN(nvtx_name_thread_w),
    };
    static const NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {
        [NVTX_CBID_CORE2_DomainMarkEx] = FN(nvtx_domain_mark_ex),
        [NVTX_CBID_CORE2_DomainRangeStartEx] = FN(nvtx_domain_start_ex),
        [NVTX_CBID_CORE2_DomainRangeEnd] = FN(nvtx_domain_end),
        [NVTX_CBID_CORE2_DomainRangePushEx] = FN(nvtx_domain_push_ex),
        [NVTX_CBID_CORE2_DomainRangePop] = FN(nvtx_domain_pop),
        [NVTX_CBID_CORE2_DomainRegisterStringA] = FN(nvtx_register_a),
        [NVTX_CBID_CORE2_DomainRegisterStringW] = FN(nvtx_register_w),
        [NVTX_CBID_CORE2_DomainCreateA] = FN(nvtx_domain_create_a),
        [NVTX_CBID_CORE2_DomainCreateW] = FN(nvtx_domain_create_w),
        [NVTX_CBID_CORE2_DomainDestroy] = FN(nvtx_domain_destroy),
    };
    if (!fill_module(cb, NVTX_CB_MODULE_CORE, core, NVTX_CBID_CORE_SIZE))
        return 0;
    fill_module(cb, NVTX_CB_MODULE_CORE2, core2, NVTX_CBID_CORE2_SIZE);
    wsl_log(WSL_LOG_DEBUG, "NVTX client attached");
    return 1;
}
