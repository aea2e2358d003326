/*
 * wslshim-doctor (`wslshim doctor`): checks the environment a CUDA program
 * would run in and says what to fix, each finding with its evidence
 * (docs/doctor.md).
 *
 *   wslshim-doctor [--json] [--path PATH]... [--probe FILE] [--root DIR]
 *
 * --root DIR reads /proc, /sys, /etc, /dev, /usr and /mnt under DIR instead
 * of the live system (tests, or a copy of another machine's files); the
 * driver is then not loaded. Environment variables (LD_LIBRARY_PATH,
 * CUDA_VISIBLE_DEVICES, WSL_DISTRO_NAME) are always this process's.
 *
 * Exit status: 0 when the checks ran (whatever they found), 2 usage error.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "json_reader.h"
#include "json_writer.h"
#include "mounts.h"
#include "profiles.h"
#include "wslshim/cli.h"
#include "wslshim/trace_format.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

/* ---- options ---- */

#define MAX_PATHS 16

static struct {
    bool json;
    const char *root; /* "" = the live system */
    const char *paths[MAX_PATHS];
    int path_count;
    const char *probe;
} opt = {.root = ""};

/* ---- findings ---- */

enum status { ST_OK, ST_INFO, ST_WARN, ST_ERROR };
static const char *const status_names[] = {"ok", "info", "warn", "error"};

#define MAX_FINDINGS 64
#define MAX_EVIDENCE 16

struct finding {
    const char *id;
    enum status status;
    char *summary;
    char *evidence[MAX_EVIDENCE];
    int evidence_count;
    char *fix;
};

static struct finding findings[MAX_FINDINGS];
static int finding_count;

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        fputs("wslshim-doctor: out of memory\n", stderr);
        exit(2);
    }
    return s;
}

static struct finding *add_finding(const char *id, enum status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static struct finding *add_finding(const char *id, enum status st, const char *fmt, ...)
{
    static struct finding overflow;
    if (finding_count == MAX_FINDINGS)
        return &overflow;
    struct finding *f = &findings[finding_count++];
    f->id = id;
    f->status = st;
    va_list ap;
    va_start(ap, fmt);
    f->summary = vfmt(fmt, ap);
    va_end(ap);
    return f;
}

static void evidence(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(struct finding *f, const char *fmt, ...)
{
    if (f->evidence_count == MAX_EVIDENCE)
        return;
    va_list ap;
    va_start(ap, fmt);
    f->evidence[f->evidence_count++] = vfmt(fmt, ap);
    va_end(ap);
}

static void fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix(struct finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(f->fix);
    f->fix = vfmt(fmt, ap);
    va_end(ap);
}

/* ---- files under the root ---- */

static void rooted(char *out, size_t size, const char *path)
{
    snprintf(out, size, "%s%s", opt.root, path);
}

static bool exists(const char *path)
{
    char p[PATH_MAX];
    rooted(p, sizeof p, path);
    struct stat st;
    return stat(p, &st) == 0;
}

/* Whole small file (at most max bytes), NUL-terminated; NULL if unreadable. */
static char *slurp_abs(const char *p, size_t max, size_t *len)
{
    FILE *f = fopen(p, "re");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap || n >= max)
            break;
        char *t = realloc(buf, cap * 2 + 1);
        if (!t) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = t;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static char *slurp(const char *path, size_t max, size_t *len)
{
    char p[PATH_MAX];
    rooted(p, sizeof p, path);
    return slurp_abs(p, max, len);
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
}

/* Follows symlinks of path inside the root (absolute targets are read
 * relative to the root). Writes the final path (root-relative) to out. */
static void resolve_in_root(const char *path, char *out, size_t size)
{
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        char p[PATH_MAX], target[PATH_MAX];
        rooted(p, sizeof p, cur);
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0)
            break;
        target[n] = 0;
        if (target[0] == '/') {
            snprintf(cur, sizeof cur, "%s", target);
        } else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", cur);
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = 0;
            char next[PATH_MAX];
            if (snprintf(next, sizeof next, "%s/%s", dir, target) >= (int)sizeof next)
                break;
            snprintf(cur, sizeof cur, "%s", next);
        }
    }
    snprintf(out, size, "%s", cur);
}

/* ---- platform ---- */

static int wsl_version; /* 0 native, 1, 2 */
static char osrelease[256];

static void check_platform(void)
{
    char *s = slurp("/proc/sys/kernel/osrelease", 4096, NULL);
    if (!s) {
        struct finding *f = add_finding("platform", ST_WARN, "cannot read the kernel release");
        evidence(f, "%s/proc/sys/kernel/osrelease: %s", opt.root, strerror(errno));
        return;
    }
    chomp(s);
    snprintf(osrelease, sizeof osrelease, "%s", s);
    free(s);
    char low[256];
    size_t i = 0;
    for (; osrelease[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)osrelease[i]);
    low[i] = 0;
    if (strstr(low, "microsoft"))
        wsl_version = strstr(low, "wsl2") || strstr(low, "microsoft-standard") ? 2 : 1;
    struct finding *f;
    if (wsl_version == 2) {
        f = add_finding("platform", ST_OK, "WSL2: CUDA calls reach the Windows driver through /dev/dxg");
    } else if (wsl_version == 1) {
        f = add_finding("platform", ST_ERROR, "WSL1: CUDA does not work under WSL1");
        fix(f, "convert the distribution to WSL2 (in Windows: wsl --set-version <distro> 2)");
    } else {
        f = add_finding("platform", ST_OK, "native Linux (not WSL)");
    }
    evidence(f, "/proc/sys/kernel/osrelease: %s", osrelease);
    const char *distro = getenv("WSL_DISTRO_NAME");
    if (distro && *distro)
        evidence(f, "WSL_DISTRO_NAME=%s", distro);
    if (!wsl_version && distro && *distro)
        evidence(f, "WSL_DISTRO_NAME is set but the kernel is not a WSL kernel: the environment came from elsewhere");
}

/* ---- GPU devices and visibility ---- */

static void check_devices(void)
{
    struct finding *f;
    if (wsl_version == 2) {
        if (exists("/dev/dxg")) {
            f = add_finding("gpu_device", ST_OK, "/dev/dxg is present: the GPU is shared from Windows");
            evidence(f, "/dev/dxg exists");
        } else {
            f = add_finding("gpu_device", ST_ERROR, "no /dev/dxg: this WSL2 has no GPU paravirtualization");
            evidence(f, "/dev/dxg does not exist");
            fix(f, "install the NVIDIA Windows driver (it includes WSL support), then update WSL "
                   "(wsl --update) and restart it (wsl --shutdown)");
        }
        if (exists("/dev/nvidia0") || exists("/dev/nvidiactl")) {
            struct finding *g = add_finding("gpu_device_nodes", ST_WARN,
                                            "/dev/nvidia* nodes exist inside WSL2, where the GPU is /dev/dxg");
            evidence(g, "%s exists", exists("/dev/nvidiactl") ? "/dev/nvidiactl" : "/dev/nvidia0");
            fix(g, "a Linux NVIDIA driver was probably installed inside WSL: remove it (see the libcuda finding)");
        }
    } else if (wsl_version == 0) {
        char p[PATH_MAX];
        rooted(p, sizeof p, "/dev");
        DIR *d = opendir(p);
        int gpus = 0;
        bool ctl = false;
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strncmp(e->d_name, "nvidia", 6) && isdigit((unsigned char)e->d_name[6]))
                    gpus++;
                if (!strcmp(e->d_name, "nvidiactl"))
                    ctl = true;
            }
            closedir(d);
        }
        if (gpus && ctl) {
            f = add_finding("gpu_device", ST_OK, "%d NVIDIA device node%s (/dev/nvidia*)", gpus, gpus > 1 ? "s" : "");
            evidence(f, "/dev/nvidiactl and %d /dev/nvidiaN", gpus);
        } else {
            f = add_finding("gpu_device", ST_ERROR, "no NVIDIA device nodes: the driver is not loaded, or this "
                                                    "container was started without the GPUs");
            evidence(f, "/dev/nvidiactl %s, %d /dev/nvidiaN", ctl ? "exists" : "missing", gpus);
            fix(f, "load the NVIDIA kernel driver (nvidia-smi should list the GPU); in a container, start it with "
                   "--gpus all (NVIDIA Container Toolkit)");
        }
        if (exists("/proc/driver/nvidia/version")) {
            char *v = slurp("/proc/driver/nvidia/version", 4096, NULL);
            if (v) {
                char *nl = strchr(v, '\n');
                if (nl)
                    *nl = 0;
                evidence(f, "/proc/driver/nvidia/version: %s", v);
                free(v);
            }
        }
    }
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd) {
        bool hides = !*cvd || !strcmp(cvd, "-1") || !strcasecmp(cvd, "NoDevFiles") || !strcasecmp(cvd, "none");
        f = add_finding("cuda_visible_devices", hides ? ST_ERROR : ST_INFO,
                        hides ? "CUDA_VISIBLE_DEVICES hides every GPU" : "CUDA_VISIBLE_DEVICES restricts the GPUs");
        evidence(f, "CUDA_VISIBLE_DEVICES=%s", cvd);
        if (hides)
            fix(f, "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. 0)");
    }
}

/* ---- which libcuda.so.1 a process would load ---- */

struct candidate {
    char path[PATH_MAX];      /* as found */
    char resolved[PATH_MAX];  /* after symlinks */
    const char *via;          /* "LD_LIBRARY_PATH", "ld.so.cache", "default directory" */
    bool wsl;                 /* WSL's own (served from Windows) */
};

#define MAX_CANDIDATES 16
static struct candidate cands[MAX_CANDIDATES];
static int cand_count;

static bool is_wsl_lib(const char *path)
{
    return !strncmp(path, "/usr/lib/wsl/", 13);
}

static void add_candidate(const char *path, const char *via)
{
    for (int i = 0; i < cand_count; i++)
        if (!strcmp(cands[i].path, path))
            return;
    if (cand_count == MAX_CANDIDATES || !exists(path))
        return;
    struct candidate *c = &cands[cand_count++];
    snprintf(c->path, sizeof c->path, "%s", path);
    resolve_in_root(path, c->resolved, sizeof c->resolved);
    c->via = via;
    c->wsl = is_wsl_lib(c->path) || is_wsl_lib(c->resolved);
}

/* The libcuda.so.1 entries of ld.so.cache (glibc's "glibc-ld.so.cache1.1"
 * format), in cache order. Returns -1 when the file is missing or not a
 * cache; cache_note says why. */
static char cache_note[256];

static int read_ld_cache(void)
{
    size_t len = 0;
    char *buf = slurp("/etc/ld.so.cache", 64u << 20, &len);
    if (!buf) {
        snprintf(cache_note, sizeof cache_note, "/etc/ld.so.cache: %s", strerror(errno));
        return -1;
    }
    static const char magic[] = "glibc-ld.so.cache1.1";
    const size_t mlen = sizeof magic - 1, header = 48, entry = 24;
    char *base = memmem(buf, len, magic, mlen);
    if (!base || (size_t)(base - buf) + header > len) {
        snprintf(cache_note, sizeof cache_note, "/etc/ld.so.cache: not a glibc 1.1 cache");
        free(buf);
        return -1;
    }
    size_t avail = len - (size_t)(base - buf);
    uint32_t nlibs;
    memcpy(&nlibs, base + 20, 4);
    if (nlibs > (avail - header) / entry) {
        snprintf(cache_note, sizeof cache_note, "/etc/ld.so.cache: truncated");
        free(buf);
        return -1;
    }
    int found = 0;
    for (uint32_t i = 0; i < nlibs; i++) {
        const char *e = base + header + (size_t)i * entry;
        uint32_t key, value;
        memcpy(&key, e + 4, 4);
        memcpy(&value, e + 8, 4);
        if (key >= avail || value >= avail || !memchr(base + key, 0, avail - key) ||
            !memchr(base + value, 0, avail - value))
            continue;
        if (!strcmp(base + key, "libcuda.so.1")) {
            add_candidate(base + value, "ld.so.cache");
            found++;
        }
    }
    snprintf(cache_note, sizeof cache_note, "/etc/ld.so.cache: %u entries, %d for libcuda.so.1", nlibs, found);
    free(buf);
    return 0;
}

/* Linux driver copies anywhere in the usual library folders. */
static void find_strays(char strays[][PATH_MAX], int *count, int max)
{
    static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64",
                                       "/lib64", "/usr/lib", "/lib", "/usr/local/lib",
                                       "/usr/lib/aarch64-linux-gnu", "/usr/local/cuda/lib64",
                                       "/usr/local/cuda/compat"};
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        char p[PATH_MAX];
        rooted(p, sizeof p, dirs[d]);
        DIR *dir = opendir(p);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir)) && *count < max) {
            if (strncmp(e->d_name, "libcuda.so", 10))
                continue;
            char full[PATH_MAX];
            snprintf(full, sizeof full, "%s/%s", dirs[d], e->d_name);
            char res[PATH_MAX];
            resolve_in_root(full, res, sizeof res);
            if (is_wsl_lib(res))
                continue;
            bool dup = false;
            for (int i = 0; i < *count; i++)
                dup |= !strcmp(strays[i], full);
            if (!dup)
                snprintf(strays[(*count)++], PATH_MAX, "%s", full);
        }
        closedir(dir);
    }
}

static char loaded_path[PATH_MAX];
static int loaded_version; /* cuDriverGetVersion, 0 unknown */

static void check_libcuda(void)
{
    cand_count = 0;
    const char *llp = getenv("LD_LIBRARY_PATH");
    if (llp && *llp) {
        char *copy = strdup(llp), *save = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
            if (!*d)
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/libcuda.so.1", d);
            add_candidate(p, "LD_LIBRARY_PATH");
        }
        free(copy);
    }
    read_ld_cache();
    /* The loader's own folders when the cache misses (Debian-style glibc
     * builds include the multiarch ones). */
    static const char *const defaults[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                           "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/libcuda.so.1", defaults[i]);
        add_candidate(p, "default directory");
    }

    /* The live answer, when it is this machine: what dlopen really picks. */
    if (!*opt.root) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (h) {
            struct link_map *lm = NULL;
            if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
                snprintf(loaded_path, sizeof loaded_path, "%s", lm->l_name);
            int (*get_version)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
            if (get_version && get_version(&loaded_version) != 0)
                loaded_version = 0;
            dlclose(h);
        }
    }

    struct finding *f;
    const struct candidate *first = cand_count ? &cands[0] : NULL;
    const char *chosen = loaded_path[0] ? loaded_path : first ? first->path : NULL;
    char chosen_resolved[PATH_MAX] = "";
    if (chosen)
        resolve_in_root(chosen, chosen_resolved, sizeof chosen_resolved);
    bool chosen_wsl = chosen && (is_wsl_lib(chosen) || is_wsl_lib(chosen_resolved));
    if (!chosen) {
        f = add_finding("libcuda", ST_ERROR, "no libcuda.so.1: a CUDA program here finds no driver");
        fix(f, wsl_version == 2 ? "WSL provides /usr/lib/wsl/lib/libcuda.so.1 from the Windows NVIDIA driver: "
                                  "install or update that driver, then run wsl --shutdown"
                                : "install the NVIDIA driver for this GPU (its user-space part provides "
                                  "libcuda.so.1)");
    } else if (wsl_version == 2 && !chosen_wsl) {
        f = add_finding("libcuda", ST_ERROR,
                        "a process would load %s, a Linux driver, instead of WSL's /usr/lib/wsl/lib/libcuda.so.1",
                        chosen);
        fix(f, "remove the Linux NVIDIA driver installed inside WSL (the CUDA on WSL guide says never to install "
               "one; install a toolkit package without the driver, e.g. cuda-toolkit-XX-Y), and keep "
               "/usr/lib/wsl/lib first (sudo ldconfig; check LD_LIBRARY_PATH)");
    } else if (wsl_version != 2 && chosen_wsl) {
        f = add_finding("libcuda", ST_ERROR, "a process would load WSL's %s, but this is not WSL2", chosen);
        fix(f, "remove /usr/lib/wsl from LD_LIBRARY_PATH and /etc/ld.so.conf.d");
    } else {
        f = add_finding("libcuda", ST_OK, "a process would load %s%s", chosen,
                        chosen_wsl ? " (WSL's, from the Windows driver)" : "");
    }
    if (loaded_path[0])
        evidence(f, "dlopen(\"libcuda.so.1\") here loaded %s", loaded_path);
    if (loaded_version)
        evidence(f, "its cuDriverGetVersion: %d (CUDA %d.%d)", loaded_version, loaded_version / 1000,
                 loaded_version % 1000 / 10);
    for (int i = 0; i < cand_count; i++) {
        if (strcmp(cands[i].path, cands[i].resolved))
            evidence(f, "%d. %s -> %s (%s)", i + 1, cands[i].path, cands[i].resolved, cands[i].via);
        else
            evidence(f, "%d. %s (%s)", i + 1, cands[i].path, cands[i].via);
    }
    if (cache_note[0])
        evidence(f, "%s", cache_note);
    if (llp && *llp)
        evidence(f, "LD_LIBRARY_PATH=%s", llp);

    if (wsl_version == 2) {
        char strays[8][PATH_MAX];
        int n = 0;
        find_strays(strays, &n, 8);
        if (!exists("/usr/lib/wsl/lib/libcuda.so.1")) {
            struct finding *g = add_finding("wsl_driver_lib", ST_ERROR, "/usr/lib/wsl/lib/libcuda.so.1 is missing");
            evidence(g, "/usr/lib/wsl/lib/libcuda.so.1 does not exist");
            fix(g, "install or update the NVIDIA driver in Windows, then run wsl --shutdown");
        }
        if (n) {
            struct finding *g = add_finding("linux_driver_in_wsl", chosen_wsl ? ST_WARN : ST_ERROR,
                                            "a Linux NVIDIA driver library is installed inside WSL2");
            for (int i = 0; i < n; i++) {
                char res[PATH_MAX];
                resolve_in_root(strays[i], res, sizeof res);
                if (strcmp(res, strays[i]))
                    evidence(g, "%s -> %s", strays[i], res);
                else
                    evidence(g, "%s", strays[i]);
            }
            fix(g, "uninstall it (e.g. sudo apt remove --purge 'libnvidia-compute-*' 'nvidia-driver-*', or the "
                   "cuda/cuda-drivers meta-packages); a program that finds it first fails or loses the GPU");
        }
    }
}

/* ---- driver and toolkit versions ---- */

static void check_versions(void)
{
    int toolkit = 0;
    char evidence_line[PATH_MAX + 64] = "";
    const char *home = *opt.root ? NULL : getenv("CUDA_HOME");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", home && *home ? home : "/usr/local/cuda");
    char header[PATH_MAX + 32];
    snprintf(header, sizeof header, "%s/include/cuda.h", dir);
    char *h = slurp(header, 4u << 20, NULL);
    if (h) {
        const char *p = strstr(h, "#define CUDA_VERSION ");
        if (p)
            toolkit = atoi(p + 21);
        free(h);
        if (toolkit)
            snprintf(evidence_line, sizeof evidence_line, "%s: CUDA_VERSION %d", header, toolkit);
    }
    char vj[PATH_MAX + 32];
    snprintf(vj, sizeof vj, "%s/version.json", dir);
    size_t len = 0;
    char *text = slurp(vj, 1u << 20, &len);
    char toolkit_text[64] = "";
    if (text) {
        struct wsl_json *doc = wsl_json_parse(text, len, NULL, 0);
        const struct wsl_json *cuda = wsl_json_get(doc, "cuda");
        const struct wsl_json *ver = wsl_json_get(cuda, "version");
        if (ver && ver->type == WSL_JSON_STRING)
            snprintf(toolkit_text, sizeof toolkit_text, "%s", ver->string);
        wsl_json_free(doc);
        free(text);
    }
    int driver = loaded_version;
    const char *driver_src = driver ? "cuDriverGetVersion of the loaded libcuda" : NULL;
    if (!driver && opt.probe) {
        size_t plen = 0;
        char *pt = slurp_abs(opt.probe, 4u << 20, &plen);
        struct wsl_json *doc = pt ? wsl_json_parse(pt, plen, NULL, 0) : NULL;
        const struct wsl_json *dv = wsl_json_get(wsl_json_get(doc, "machine"), "driver_version");
        if (dv && dv->type == WSL_JSON_NUMBER && dv->number > 0 && dv->number < 1e6) {
            driver = (int)dv->number;
            driver_src = "the probe file's machine.driver_version";
        }
        wsl_json_free(doc);
        free(pt);
    }
    struct finding *f;
    if (!toolkit && !driver) {
        f = add_finding("versions", ST_INFO, "CUDA toolkit and driver versions unknown");
        evidence(f, "no %s, and no driver was loaded%s", header, opt.probe ? "" : " (give --probe FILE)");
        return;
    }
    if (toolkit && driver && toolkit / 1000 > driver / 1000) {
        f = add_finding("versions", ST_ERROR, "the CUDA toolkit (%d.%d) is newer than the driver supports (%d.%d)",
                        toolkit / 1000, toolkit % 1000 / 10, driver / 1000, driver % 1000 / 10);
        fix(f, wsl_version == 2 ? "update the NVIDIA driver in Windows (WSL uses the Windows driver)"
                                : "update the NVIDIA driver, or use a toolkit of the driver's major version");
    } else if (toolkit && driver) {
        f = add_finding("versions", ST_OK, "driver supports CUDA %d.%d, toolkit is CUDA %d.%d", driver / 1000,
                        driver % 1000 / 10, toolkit / 1000, toolkit % 1000 / 10);
    } else if (driver) {
        f = add_finding("versions", ST_INFO, "driver supports CUDA %d.%d; no toolkit found (not needed to run "
                                             "programs that ship their own runtime, e.g. PyTorch wheels)",
                        driver / 1000, driver % 1000 / 10);
    } else {
        f = add_finding("versions", ST_INFO, "toolkit is CUDA %d.%d; the driver's version is unknown here",
                        toolkit / 1000, toolkit % 1000 / 10);
    }
    if (driver)
        evidence(f, "driver %d from %s", driver, driver_src);
    if (evidence_line[0])
        evidence(f, "%s", evidence_line);
    if (toolkit_text[0])
        evidence(f, "%s: %s", vj, toolkit_text);
}

/* ---- where the data lives ---- */

static struct wsl_mount_table *mounts;

static void load_mounts(struct finding **note)
{
    size_t len = 0;
    char *text = slurp("/proc/self/mountinfo", 16u << 20, &len);
    if (!text) {
        *note = add_finding("mounts", ST_WARN, "cannot read the mount table");
        evidence(*note, "%s/proc/self/mountinfo: %s", opt.root, strerror(errno));
        return;
    }
    char err[WSL_MOUNTS_ERRLEN];
    mounts = wsl_mounts_parse(text, len, err, sizeof err);
    free(text);
    if (!mounts) {
        *note = add_finding("mounts", ST_WARN, "the mount table cannot be parsed");
        evidence(*note, "/proc/self/mountinfo: %s", err);
    }
}

static void check_path(const char *path)
{
    char abs[PATH_MAX];
    uint64_t dev = 0;
    if (*opt.root) {
        /* A path of that machine: looked up in its mount table by prefix. */
        snprintf(abs, sizeof abs, "%s", path);
    } else {
        struct stat st;
        if (!realpath(path, abs) || stat(abs, &st) != 0) {
            struct finding *f = add_finding("data_location", ST_WARN, "%s: %s", path, strerror(errno));
            evidence(f, "stat(%s) failed", path);
            return;
        }
        dev = WSL_DEV(major(st.st_dev), minor(st.st_dev));
    }
    const struct wsl_mount *m = mounts ? wsl_mounts_find(mounts, dev, abs, strlen(abs)) : NULL;
    if (!m) {
        struct finding *f = add_finding("data_location", ST_INFO, "%s: filesystem unknown", abs);
        evidence(f, "no mount of the mount table holds it");
        return;
    }
    enum wsl_fs_kind kind = wsl_mount_classify(m, wsl_version != 0);
    struct finding *f;
    if (wsl_fs_kind_crosses_windows(kind)) {
        f = add_finding("data_location", ST_WARN,
                        "%s is on a Windows drive (%s at %s): every file operation crosses to Windows", abs, m->fstype,
                        m->mount_point);
        evidence(f, "published: stat() 900-1100 us there against 1.1-1.7 us on ext4 (microsoft/WSL#7038); "
                    "reading 1 GB ~330 MB/s against ~1.5 GB/s (enso-org/enso#1542)");
        fix(f, "copy the data into the Linux filesystem (e.g. cp -r %s ~/data) and read it from there", abs);
    } else if (kind == WSL_FS_NETWORK || kind == WSL_FS_FUSE) {
        f = add_finding("data_location", ST_INFO, "%s is on %s (%s): per-file latency depends on the network or the "
                                                  "FUSE server",
                        abs, m->fstype, wsl_fs_kind_name(kind));
        fix(f, "measure it: wslshim probe --no-gpu --dir %s", abs);
    } else {
        f = add_finding("data_location", ST_OK, "%s is on %s (%s)", abs, m->fstype, wsl_fs_kind_name(kind));
    }
    evidence(f, "mount %s: fstype %s, source %s, options %s", m->mount_point, m->fstype, m->source,
             m->super_options);
    if (dev)
        evidence(f, "device %u:%u", (unsigned)(dev >> 32), (unsigned)(dev & 0xffffffffu));
}

/* ---- memory ---- */

static uint64_t meminfo(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, klen) && p[klen] == ':')
            return strtoull(p + klen + 1, NULL, 10) * 1024;
    return 0;
}

static void fmt_bytes(char *buf, size_t size, uint64_t b)
{
    if (b >= GiB)
        snprintf(buf, size, "%.1f GiB", (double)b / (double)GiB);
    else
        snprintf(buf, size, "%.0f MiB", (double)b / (double)MiB);
}

/* [wsl2] memory= / swap= of a .wslconfig in a Windows user profile. */
static void wslconfig_hint(struct finding *f, bool *memory_set)
{
    char pattern[PATH_MAX];
    rooted(pattern, sizeof pattern, "/mnt/c/Users/*/.wslconfig");
    glob_t gl;
    *memory_set = false;
    if (glob(pattern, 0, NULL, &gl) != 0) {
        evidence(f, "no .wslconfig found under /mnt/c/Users/*/: WSL2 defaults apply (memory: 50%% of Windows' RAM)");
        return;
    }
    for (size_t i = 0; i < gl.gl_pathc && i < 4; i++) {
        char *text = slurp_abs(gl.gl_pathv[i], 1u << 20, NULL);
        if (!text)
            continue;
        bool in_wsl2 = false;
        char *save = NULL;
        for (char *line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
            while (isspace((unsigned char)*line))
                line++;
            if (*line == '[') {
                in_wsl2 = !strncasecmp(line, "[wsl2]", 6);
                continue;
            }
            if (in_wsl2 && (!strncasecmp(line, "memory", 6) || !strncasecmp(line, "swap", 4))) {
                if (!strncasecmp(line, "memory", 6))
                    *memory_set = true;
                evidence(f, "%s: %s", gl.gl_pathv[i] + strlen(opt.root), line);
            }
        }
        if (!*memory_set)
            evidence(f, "%s sets no [wsl2] memory=: WSL2 gets 50%% of Windows' RAM", gl.gl_pathv[i] + strlen(opt.root));
        free(text);
    }
    globfree(&gl);
}

static void check_memory(void)
{
    char *mi = slurp("/proc/meminfo", 1u << 20, NULL);
    if (!mi) {
        struct finding *f = add_finding("memory", ST_WARN, "cannot read /proc/meminfo");
        evidence(f, "%s/proc/meminfo: %s", opt.root, strerror(errno));
        return;
    }
    uint64_t total = meminfo(mi, "MemTotal"), avail = meminfo(mi, "MemAvailable"), swap = meminfo(mi, "SwapTotal");
    free(mi);
    uint64_t limit = 0;
    const char *limit_src = NULL;
    char *cg = slurp("/sys/fs/cgroup/memory.max", 4096, NULL);
    if (cg) {
        chomp(cg);
        if (strcmp(cg, "max") && isdigit((unsigned char)cg[0])) {
            limit = strtoull(cg, NULL, 10);
            limit_src = "/sys/fs/cgroup/memory.max";
        }
        free(cg);
    } else if ((cg = slurp("/sys/fs/cgroup/memory/memory.limit_in_bytes", 4096, NULL))) {
        limit = strtoull(cg, NULL, 10);
        limit_src = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
        if (limit >= (1ull << 60))
            limit = 0; /* "unlimited" is a huge number in cgroup v1 */
        free(cg);
    }
    char t[32], a[32], s[32], l[32];
    fmt_bytes(t, sizeof t, total);
    fmt_bytes(a, sizeof a, avail);
    fmt_bytes(s, sizeof s, swap);
    fmt_bytes(l, sizeof l, limit);
    bool low = total && total < 16 * GiB;
    bool capped = limit && total && limit < total;
    struct finding *f = add_finding("memory", low || capped ? ST_WARN : ST_OK, "%s of memory%s%s, %s available",
                                    t, capped ? ", limited to " : "", capped ? l : "", a);
    evidence(f, "/proc/meminfo: MemTotal %s, MemAvailable %s, SwapTotal %s", t, a, s);
    if (limit_src)
        evidence(f, "%s: %s", limit_src, limit ? l : "no limit");
    if (wsl_version == 2) {
        bool memory_set;
        wslconfig_hint(f, &memory_set);
        if (low)
            fix(f, "give WSL2 more memory: in %%UserProfile%%\\.wslconfig, [wsl2] memory=<size> (e.g. 32GB), then "
                   "wsl --shutdown");
    } else if (low) {
        fix(f, "DataLoader workers and pinned buffers need host memory: use fewer workers or a smaller batch");
    }
    if (capped && !f->fix)
        fix(f, "the cgroup (container) limit is below the machine's memory: raise it (e.g. docker --memory)");
}

/* ---- pinned memory ---- */

static void check_pinned(void)
{
    if (!opt.probe) {
        struct finding *f = add_finding("pinned_memory", ST_INFO, "pinned-memory ceiling not measured");
        if (wsl_version == 2)
            evidence(f, "WSL2 ceilings of 0.5-1 GB have been reported (microsoft/WSL#14078, "
                        "NVIDIA/nvidia-container-toolkit#226)");
        fix(f, "measure it: wslshim probe --out probe.json, then wslshim doctor --probe probe.json");
        return;
    }
    struct wsl_profile p;
    char err[512];
    if (wsl_profile_load(opt.probe, &p, err, sizeof err) != 0) {
        struct finding *f = add_finding("pinned_memory", ST_WARN, "the probe file cannot be read");
        evidence(f, "%s", err);
        return;
    }
    /* limited_by is not in the profile struct: read it from the file. */
    size_t len = 0;
    char *text = slurp_abs(opt.probe, 4u << 20, &len);
    struct wsl_json *doc = text ? wsl_json_parse(text, len, NULL, 0) : NULL;
    const struct wsl_json *lb = wsl_json_get(wsl_json_get(doc, "pinned"), "limited_by");
    bool by_driver = lb && lb->type == WSL_JSON_STRING && !strcmp(lb->string, "driver");
    wsl_json_free(doc);
    free(text);
    if (!wsl_figure_known(p.pinned_max_bytes)) {
        struct finding *f = add_finding("pinned_memory", ST_INFO, "the probe file has no pinned-memory figure");
        evidence(f, "%s: \"pinned\" is null (probed with --no-gpu, or the GPU could not be probed)", opt.probe);
        return;
    }
    char m[32];
    fmt_bytes(m, sizeof m, (uint64_t)p.pinned_max_bytes.value);
    struct finding *f;
    if (by_driver && p.pinned_max_bytes.value < 4.0 * GiB) {
        f = add_finding("pinned_memory", ST_WARN, "pinned allocations above %s fail here", m);
        fix(f, "keep each pinned allocation (DataLoader pin_memory batches, cudaHostAlloc, staging buffers) below "
               "%s; if pinning fails with many workers, turn pin_memory off or shrink the prefetch", m);
    } else if (by_driver) {
        f = add_finding("pinned_memory", ST_OK, "pinned allocations up to %s succeed", m);
    } else {
        f = add_finding("pinned_memory", ST_OK, "pinned allocations up to %s succeed (the probe's cap, not a limit)",
                        m);
    }
    evidence(f, "%s: pinned.max_bytes %.0f, limited_by %s", opt.probe, p.pinned_max_bytes.value,
             by_driver ? "driver" : "cap");
}

/* ---- output ---- */

static int count_status(enum status st)
{
    int n = 0;
    for (int i = 0; i < finding_count; i++)
        n += findings[i].status == st;
    return n;
}

static const char *platform_text(void)
{
    return wsl_version == 2 ? "wsl2" : wsl_version == 1 ? "wsl1" : "native";
}

static void print_json(void)
{
    struct json_writer jw, *w = &jw;
    json_init(w, stdout);
    json_begin_object(w);
    json_key(w, "schema");
    json_u64(w, 1);
    json_key(w, "tool");
    json_string(w, "wslshim-doctor");
    json_key(w, "root");
    json_string(w, *opt.root ? opt.root : "/");
    json_key(w, "platform");
    json_string(w, platform_text());
    json_key(w, "kernel_release");
    json_string(w, osrelease);
    json_key(w, "counts");
    json_begin_object(w);
    for (int s = 0; s < 4; s++) {
        json_key(w, status_names[s]);
        json_u64(w, (uint64_t)count_status((enum status)s));
    }
    json_end_object(w);
    json_key(w, "findings");
    json_begin_array(w);
    for (int i = 0; i < finding_count; i++) {
        const struct finding *f = &findings[i];
        json_begin_object(w);
        json_key(w, "id");
        json_string(w, f->id);
        json_key(w, "status");
        json_string(w, status_names[f->status]);
        json_key(w, "summary");
        json_string(w, f->summary);
        json_key(w, "evidence");
        json_begin_array(w);
        for (int k = 0; k < f->evidence_count; k++)
            json_string(w, f->evidence[k]);
        json_end_array(w);
        json_key(w, "fix");
        if (f->fix)
            json_string(w, f->fix);
        else
            json_null(w);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
    json_finish(w);
}

static void print_text(void)
{
    static const char *const tags[] = {"[ok]   ", "[info] ", "[WARN] ", "[ERROR]"};
    printf("wslshim doctor: %s (kernel %s)%s%s\n", platform_text(), osrelease[0] ? osrelease : "unknown",
           *opt.root ? ", files under " : "", opt.root);
    for (int i = 0; i < finding_count; i++) {
        const struct finding *f = &findings[i];
        printf("%s %s: %s\n", tags[f->status], f->id, f->summary);
        for (int k = 0; k < f->evidence_count; k++)
            printf("        evidence: %s\n", f->evidence[k]);
        if (f->fix)
            printf("        fix: %s\n", f->fix);
    }
    int e = count_status(ST_ERROR), w = count_status(ST_WARN);
    if (e || w)
        printf("%d error%s, %d warning%s\n", e, e == 1 ? "" : "s", w, w == 1 ? "" : "s");
    else
        printf("nothing to fix\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wslshim-doctor [--json] [--path PATH]... [--probe FILE] [--root DIR]\n"
               "Checks what a CUDA program here would run on and says what to fix.\n"
               "  --json        the findings as JSON\n"
               "  --path PATH   where a dataset lives (repeatable; default: the current folder)\n"
               "  --probe FILE  a calibration file from wslshim-probe (pinned-memory ceiling, driver version)\n"
               "  --root DIR    read /proc, /sys, /etc, /dev, /usr, /mnt under DIR (another machine's files)\n");
}

#ifndef WSLSHIM_VERSION
#define WSLSHIM_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"version", no_argument, NULL, 'V'}, {"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, 'j'},
        {"path", required_argument, NULL, 'p'}, {"probe", required_argument, NULL, 'b'},
        {"root", required_argument, NULL, 'r'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":Vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'V':
            return cli_print_version("wslshim-doctor");
        case 'h':
            usage(stdout);
            return 0;
        case 'j':
            opt.json = true;
            break;
        case 'p': case 'b': case 'r':
            if (!optarg[0]) {
                fprintf(stderr, "wslshim-doctor: %s needs a value (try --help)\n",
                        c == 'p' ? "--path" : c == 'b' ? "--probe" : "--root");
                return 2;
            }
            if (c == 'p') {
                if (opt.path_count == MAX_PATHS) {
                    fprintf(stderr, "wslshim-doctor: at most %d --path options\n", MAX_PATHS);
                    return 2;
                }
                opt.paths[opt.path_count++] = optarg;
            } else if (c == 'b') {
                opt.probe = optarg;
            } else {
                opt.root = optarg;
            }
            break;
        default:
            cli_option_error("wslshim-doctor", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wslshim-doctor: unknown option '%s' (try --help)\n", argv[optind]);
        return 2;
    }
    if (*opt.root) {
        struct stat st;
        if (stat(opt.root, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "wslshim-doctor: --root %s: %s\n", opt.root,
                    stat(opt.root, &st) != 0 ? strerror(errno) : "not a folder");
            return 2;
        }
        /* "/" as root is the live system; drop a trailing slash either way. */
        static char root[PATH_MAX];
        snprintf(root, sizeof root, "%s", opt.root);
        size_t n = strlen(root);
        while (n && root[n - 1] == '/')
            root[--n] = 0;
        opt.root = root;
    }
    if (opt.probe) {
        struct wsl_profile p;
        char err[512];
        if (wsl_profile_load(opt.probe, &p, err, sizeof err) != 0) {
            fprintf(stderr, "wslshim-doctor: --probe %s\n", err);
            return 2;
        }
    }
    static char cwd[PATH_MAX];
    if (!opt.path_count)
        opt.paths[opt.path_count++] = getcwd(cwd, sizeof cwd) ? cwd : ".";

    check_platform();
    check_devices();
    check_libcuda();
    check_versions();
    struct finding *mount_note = NULL;
    load_mounts(&mount_note);
    for (int i = 0; i < opt.path_count; i++)
        check_path(opt.paths[i]);
    check_memory();
    check_pinned();
    wsl_mounts_free(mounts);

    if (opt.json)
        print_json();
    else
        print_text();
    if (fflush(stdout) != 0) {
        fprintf(stderr, "wslshim-doctor: writing the output failed: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}
