/*
 * WSLSHIM_IO_PATHS=hash: file paths go into the trace with every name below
 * its mount point replaced by a keyed hash, for traces that will be shared.
 *
 *   /mnt/d/alice/train/img_0001.jpg  ->  /mnt/d/<hash>/<hash>/<hash>.jpg   (/mnt/d a mount point)
 *
 * What stays readable, so that the report still says where time went:
 *   - the mount point the path lies under (from the writer's latest mount
 *     table): the filesystem classification (9p drvfs, ext4, ...) works as
 *     before, by device and by path;
 *   - the directory structure: one hash per component, equal names give
 *     equal hashes in every process of the run, so per-directory figures
 *     still add up; "." and ".." stay as they are;
 *   - a short file extension (up to 8 letters or digits), which tells data
 *     formats apart, and a shared library's ".so.N" suffix;
 *   - the system and software trees (/proc /sys /dev /usr /lib* /bin /sbin
 *     /etc /opt), and the Python package directory names (site-packages,
 *     dist-packages, __pycache__, python3.X): the report keeps what the
 *     interpreter and loader read apart from the data.
 * The hash is SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012) truncated to 48 bits, keyed by
 * WSLSHIM_IO_PATHS_KEY: without a key, common names can be guessed by
 * hashing a dictionary; with a secret key they cannot.
 *
 * Runs in the writer thread only (it owns the mount point list).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim_internal.h"

static uint64_t key0, key1;

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                                 \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                                    \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                                    \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                                 \
    } while (0)

static uint64_t siphash24(uint64_t k0, uint64_t k1, const uint8_t *in, size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    uint64_t b = (uint64_t)len << 56;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t m = 0;
        for (int j = 0; j < 8; j++)
            m |= (uint64_t)in[i + j] << (8 * j); /* little-endian words on every host */
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t j = 0; i + j < len; j++)
        b |= (uint64_t)in[i + j] << (8 * j);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void wsl_path_hash_set_key(const char *key)
{
    key0 = key1 = 0;
    if (key && *key) {
        key0 = siphash24(0, 0, (const uint8_t *)key, strlen(key));
        key1 = siphash24(1, 0, (const uint8_t *)key, strlen(key));
    }
}

/* ---- mount points ---------------------------------------------------------------------- */
static char *points_text;    /* mount points, NUL-separated */
static uint32_t *points_len; /* lengths, one per point */
static size_t points_count;

/* /proc/self/mountinfo: the fifth field is the mount point, with \ooo escapes. */
void wsl_path_hash_note_mounts(const char *text, size_t n)
{
    char *t = malloc(n + 1);
    uint32_t *lens = malloc((n / 2 + 1) * sizeof *lens);
    if (!t || !lens) {
        free(t);
        free(lens);
        return;
    }
    size_t out = 0, count = 0;
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *f = p;
        for (int field = 0; field < 4 && f < eol; field++) {
            const char *sp = memchr(f, ' ', (size_t)(eol - f));
            f = sp ? sp + 1 : eol;
        }
        size_t start = out;
        while (f < eol && *f != ' ') {
            if (f[0] == '\\' && eol - f >= 4 && f[1] >= '0' && f[1] <= '3') {
                t[out++] = (char)((f[1] - '0') * 64 + (f[2] - '0') * 8 + (f[3] - '0'));
                f += 4;
            } else {
                t[out++] = *f++;
            }
        }
        if (out > start && t[start] == '/') {
            lens[count++] = (uint32_t)(out - start);
            t[out++] = 0;
        } else {
            out = start;
        }
        p = eol + 1;
    }
    free(points_text);
    free(points_len);
    points_text = t;
    points_len = lens;
    points_count = count;
}

/* Length of the longest mount point that `path` lies under (at a component
 * boundary); 1 for "/" when nothing longer matches. */
static size_t mount_prefix(const char *path, size_t len)
{
    size_t best = len && path[0] == '/' ? 1 : 0;
    const char *pt = points_text;
    for (size_t i = 0; i < points_count; i++) {
        size_t l = points_len[i];
        if (l > best && l <= len && !memcmp(pt, path, l) && (l == len || path[l] == '/'))
            best = l;
        pt += l + 1;
    }
    return best;
}

static int is_ext_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static int under_clear_root(const char *path, size_t len)
{
    static const char *const roots[] = {"/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64",
                                        "/bin", "/sbin", "/etc", "/opt"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        size_t n = strlen(roots[i]);
        if (len >= n && !memcmp(path, roots[i], n) && (len == n || path[n] == '/'))
            return 1;
    }
    return 0;
}

static int clear_component(const char *c, size_t n)
{
    static const char *const names[] = {"site-packages", "dist-packages", "__pycache__"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (n == strlen(names[i]) && !memcmp(c, names[i], n))
            return 1;
    if (n >= 7 && n <= 12 && !memcmp(c, "python", 6)) { /* python3, python3.11 */
        for (size_t i = 6; i < n; i++)
            if (!(c[i] == '.' || (c[i] >= '0' && c[i] <= '9')))
                return 0;
        return 1;
    }
    return 0;
}

/* Writes the hashed form of path[0, len) into out (at most cap bytes); returns its length. */
size_t wsl_path_hash(const char *path, size_t len, char *out, size_t cap)
{
    size_t keep = 0;
    if (under_clear_root(path, len)) {
        keep = len;
    } else if (len >= 4 && !memcmp(path, "<fd ", 4)) {
        const char *gt = memchr(path, '>', len);
        keep = gt ? (size_t)(gt - path) + 1 : len;
    } else {
        keep = mount_prefix(path, len);
    }
    if (keep > cap)
        keep = cap;
    memcpy(out, path, keep);
    size_t o = keep, i = keep;
    static const char hex[] = "0123456789abcdef";
    while (i < len) {
        if (path[i] == '/') {
            if (o < cap)
                out[o++] = '/';
            i++;
            continue;
        }
        size_t s = i;
        while (i < len && path[i] != '/')
            i++;
        size_t n = i - s;
        const char *c = path + s;
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.') || clear_component(c, n)) {
            for (size_t j = 0; j < n && o < cap; j++)
                out[o++] = c[j];
            continue;
        }
        uint64_t h = siphash24(key0, key1, (const uint8_t *)c, n);
        char piece[12 + 1 + 8];
        size_t pl = 0;
        for (int j = 0; j < 12; j++)
            piece[pl++] = hex[(h >> (60 - 4 * j)) & 15];
        const char *so = memmem(c, n, ".so", 3);
        const char *dot = memrchr(c, '.', n);
        if (so && so > c && (so + 3 == c + n || so[3] == '.') && (size_t)(c + n - so) <= 8) {
            memcpy(piece + pl, so, (size_t)(c + n - so)); /* libfoo.so.1 -> <hash>.so.1 */
            pl += (size_t)(c + n - so);
        } else if (dot && dot > c) {
            size_t el = n - (size_t)(dot - c) - 1, ok = el >= 1 && el <= 8;
            for (size_t j = 0; ok && j < el; j++)
                ok = is_ext_char(dot[1 + j]);
            if (ok) {
                piece[pl++] = '.';
                memcpy(piece + pl, dot + 1, el);
                pl += el;
            }
        }
        for (size_t j = 0; j < pl && o < cap; j++)
            out[o++] = piece[j];
    }
    return o;
}
