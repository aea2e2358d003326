/* The analyzer's hash map (u64_map.h): number keys against a reference, keys that all probe from
 * one slot (also across the end of the array), hash keys that many entries share, string tables. */
#include <stdlib.h>
#include <string.h>

#include "u64_map.h"
#include "unit_test.h"

/* The map's invariants: size a power of two (or 0), at most half full (3/4 dense), count the
 * occupied slots, and every entry reachable from its home slot without crossing an empty one.
 * Returns a reason. */
static const char *map_broken(const struct wsl_u64_map *m)
{
    if (!m->size)
        return m->count || m->slots || m->limit ? "empty map with slots, count or limit" : NULL;
    if (m->size & (m->size - 1))
        return "size not a power of two";
    if (m->shift < 1 || m->shift > 63 || m->size != (size_t)1 << (64 - m->shift))
        return "shift does not match the size";
    if (m->limit != (m->dense ? m->size / 4 * 3 : m->size / 2))
        return "limit not half (3/4 dense) the size";
    if (m->count > m->limit)
        return "fuller than the limit";
    size_t used = 0, mask = m->size - 1;
    for (size_t i = 0; i < m->size; i++) {
        if (!m->slots[i].key)
            continue;
        used++;
        for (size_t s = wsl_u64_map_home(m, m->slots[i].key); s != i; s = (s + 1) & mask)
            if (!m->slots[s].key)
                return "an entry past an empty slot of its probe run";
    }
    return used == m->count ? NULL : "count differs from the occupied slots";
}

#define CHECK_MAP(m)                                                \
    do {                                                            \
        const char *why_ = map_broken(m);                           \
        CHECKF(!why_, "%s (size %zu, count %zu)", why_, (m)->size, (m)->count); \
    } while (0)

/* Keys whose home is slot `home` in a map of 2^bits slots. */
static size_t colliding_keys(uint64_t *out, size_t n, unsigned bits, size_t home)
{
    const struct wsl_u64_map shape = {.size = (size_t)1 << bits, .shift = 64 - bits};
    size_t found = 0;
    for (uint64_t k = 1; found < n; k++)
        if (wsl_u64_map_home(&shape, k) == home)
            out[found++] = k;
    return found;
}

/* Inserts, updates and removes at random against a reference; keys shaped like pointers (low bits
 * equal), ids and high-bit-only values. */
static int numbers(bool dense)
{
    enum { KEYS = 6000, OPS = 200000 };
    uint64_t *keys = malloc(KEYS * sizeof *keys), *value = calloc(KEYS, sizeof *value);
    bool *present = calloc(KEYS, sizeof *present);
    CHECK(keys && value && present);
    rng_seed(27);
    for (size_t i = 0; i < KEYS; i++) {
        switch (i % 3) {
        case 0: keys[i] = 0x7f0000000000u + 4096 * (uint64_t)i; break;   /* pages */
        case 1: keys[i] = (uint64_t)i + 1; break;                         /* ids */
        default: keys[i] = (uint64_t)(i + 1) << 40; break;               /* high bits only */
        }
    }
    struct wsl_u64_map m = {.dense = dense};
    CHECK(wsl_u64_map_find(&m, keys[0]) == NULL); /* an empty map answers */
    size_t live = 0, peak_size = 0;
    for (size_t op = 0; op < OPS; op++) {
        /* grow to most keys live, then drain, then grow again */
        size_t i = (size_t)rng_below(KEYS);
        bool want_insert = (op / 50000) % 2 == 0 ? rng_below(4) != 0 : rng_below(4) == 0;
        struct wsl_u64_slot *s = wsl_u64_map_find(&m, keys[i]);
        CHECKF((s != NULL) == present[i], "op %zu: key %zu found %d, present %d", op, i, s != NULL, present[i]);
        if (s)
            CHECK(s->key == keys[i] && s->value == value[i]);
        bool added;
        if (!present[i] && want_insert) {
            value[i] = rng_next();
            if (op % 2) { /* both ways in */
                s = wsl_u64_map_insert(&m, keys[i], value[i]);
            } else {
                s = wsl_u64_map_find_or_add(&m, keys[i], value[i], &added);
                CHECK(added);
            }
            CHECK(s->key == keys[i] && s->value == value[i] && wsl_u64_map_find(&m, keys[i]) == s);
            present[i] = true;
            live++;
        } else if (present[i] && want_insert) {
            CHECK(wsl_u64_map_find_or_add(&m, keys[i], 1, &added) == s && !added && s->value == value[i]);
            s->value = value[i] = rng_next();
        } else if (present[i]) {
            wsl_u64_map_remove(&m, s);
            present[i] = false;
            live--;
        }
        CHECK(m.count == live && m.count * (dense ? 4 : 2) <= m.size * (dense ? 3 : 1));
        if (m.size > peak_size)
            peak_size = m.size;
        if (op % 997 == 0)
            CHECK_MAP(&m);
    }
    CHECK_MAP(&m);
    for (size_t i = 0; i < KEYS; i++) {
        struct wsl_u64_slot *s = wsl_u64_map_find(&m, keys[i]);
        CHECK((s != NULL) == present[i] && (!s || s->value == value[i]));
    }
    /* it grew, by doubling, to hold about 4500 live keys */
    CHECKF(peak_size == (dense ? 8192u : 16384u), "peak size %zu", peak_size);
    struct wsl_u64_slot *sorted = wsl_u64_map_sorted(&m); /* the live entries, by key */
    size_t listed = 0;
    for (size_t i = 0; i < m.count; i++) {
        CHECK(i == 0 || sorted[i - 1].key < sorted[i].key);
        for (size_t j = 0; j < KEYS; j++)
            if (keys[j] == sorted[i].key) {
                CHECK(present[j] && sorted[i].value == value[j]);
                listed++;
            }
    }
    CHECK(listed == live);
    free(sorted);
    wsl_u64_map_free(&m);
    CHECK(m.size == 0 && m.count == 0 && m.slots == NULL && m.dense == dense && wsl_u64_map_find(&m, keys[0]) == NULL);
    wsl_u64_map_insert(&m, 5, 6); /* usable again after free */
    CHECK(wsl_u64_map_find(&m, 5) && wsl_u64_map_find(&m, 5)->value == 6 && m.size == 64);
    wsl_u64_map_free(&m);
    free(keys);
    free(value);
    free(present);
    return 0;
}

int test_map_numbers(void) { return numbers(false) || numbers(true); }

/* Keys that start probing at two neighbouring slots, the last and the first of the array in one
 * round (their run wraps to the start), removed in random order: the backward shift must keep
 * every one findable, moving an entry back only where its probe run allows. */
int test_map_collisions(void)
{
    enum { N = 300 };
    uint64_t keys[N], low[N / 2], high[N / 2];
    bool present[N];
    rng_seed(31);
    for (unsigned wrap = 0; wrap < 2; wrap++) {
        /* homes in the map of 1024 slots this one becomes: slots 0 and 1, or the last slot and 0 */
        CHECK(colliding_keys(low, N / 2, 10, wrap ? 1023 : 0) == N / 2);
        CHECK(colliding_keys(high, N / 2, 10, wrap ? 0 : 1) == N / 2);
        for (size_t i = 0; i < N; i++)
            keys[i] = i % 2 ? high[i / 2] : low[i / 2];
        struct wsl_u64_map m = {0};
        for (size_t i = 0; i < N; i++) {
            CHECK(wsl_u64_map_find(&m, keys[i]) == NULL);
            wsl_u64_map_insert(&m, keys[i], i);
            present[i] = true;
        }
        CHECK(m.count == N && m.size == 1024);
        CHECK_MAP(&m);
        if (wrap) /* the run started at the last slot and went on at slot 0 */
            CHECK(m.slots[m.size - 1].key && m.slots[0].key && m.slots[N - 2].key);
        /* a key of another home, placed at the end of the run: findable while the others go */
        uint64_t other = 0;
        for (uint64_t k = 1; !other; k++)
            if (wsl_u64_map_home(&m, k) == (wrap ? 3u : 5u))
                other = k;
        wsl_u64_map_insert(&m, other, 77);
        CHECK_MAP(&m);
        for (size_t left = N; left > 0; left--) {
            size_t i;
            do
                i = (size_t)rng_below(N);
            while (!present[i]);
            struct wsl_u64_slot *s = wsl_u64_map_find(&m, keys[i]);
            CHECK(s && s->value == i);
            wsl_u64_map_remove(&m, s);
            present[i] = false;
            CHECK_MAP(&m);
            for (size_t j = 0; j < N; j++) {
                s = wsl_u64_map_find(&m, keys[j]);
                CHECKF((s != NULL) == present[j] && (!s || s->value == j), "wrap %u: key %zu after removing %zu", wrap,
                       j, i);
            }
            CHECK(wsl_u64_map_find(&m, other) && wsl_u64_map_find(&m, other)->value == 77);
        }
        CHECK(m.count == 1);
        wsl_u64_map_free(&m);
    }
    return 0;
}

/* Collects the values of every slot holding key, through find and find_next. */
static size_t walk(const struct wsl_u64_map *m, uint64_t key, uint64_t *out, size_t max)
{
    size_t n = 0;
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(m, key); s; s = wsl_u64_map_find_next(m, s))
        if (n < max)
            out[n++] = s->value;
        else
            return max + 1;
    return n;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Hash keys: many entries under one key (the worst a string table can meet: equal hashes), among
 * keys of the same home; the walk sees each exactly once, also after removals. */
int test_map_shared_hashes(void)
{
    enum { SAME = 200, OTHERS = 100 };
    uint64_t homes[OTHERS + 1], seen[SAME + 1];
    CHECK(colliding_keys(homes, OTHERS + 1, 10, 1023) == OTHERS + 1); /* the last slot of 1024 */
    const uint64_t shared = homes[0];
    struct wsl_u64_map m = {0};
    for (size_t i = 0; i < SAME; i++) {
        wsl_u64_map_insert(&m, shared, i);
        if (i < OTHERS)
            wsl_u64_map_insert(&m, homes[1 + i], 1000 + i); /* interleaved in the same run */
    }
    CHECK_MAP(&m);
    CHECK(m.count == SAME + OTHERS && m.size == 1024 && m.slots[1023].key && m.slots[0].key); /* wrapped */
    size_t n = walk(&m, shared, seen, SAME);
    CHECKF(n == SAME, "walk found %zu", n);
    qsort(seen, n, sizeof *seen, compare_u64);
    for (size_t i = 0; i < SAME; i++)
        CHECK(seen[i] == i);

    /* remove the entries of odd value, each found by walking */
    for (uint64_t v = 1; v < SAME; v += 2) {
        struct wsl_u64_slot *s = wsl_u64_map_find(&m, shared);
        while (s && s->value != v)
            s = wsl_u64_map_find_next(&m, s);
        CHECKF(s, "value %llu not walked to", (unsigned long long)v);
        wsl_u64_map_remove(&m, s);
        CHECK_MAP(&m);
    }
    n = walk(&m, shared, seen, SAME);
    CHECK(n == SAME / 2);
    qsort(seen, n, sizeof *seen, compare_u64);
    for (size_t i = 0; i < n; i++)
        CHECK(seen[i] == 2 * i);
    for (size_t i = 0; i < OTHERS; i++) {
        const struct wsl_u64_slot *s = wsl_u64_map_find(&m, homes[1 + i]);
        CHECK(s && s->value == 1000 + i && wsl_u64_map_find_next(&m, s) == NULL);
    }
    wsl_u64_map_free(&m);
    return 0;
}

/* ---- a string table as the analyses build one: strings in an array, the map indexes them ---- */

struct string_table {
    struct wsl_u64_map index;
    char **items;
    size_t count;
    uint64_t (*key)(const char *s); /* the real key, or one that gives every string the same key */
    size_t compares;
};

static uint64_t real_key(const char *s) { return wsl_u64_map_string_key(s, strlen(s)); }
static uint64_t same_key(const char *s) { return (void)s, wsl_u64_map_hash_key(0); }

static size_t table_find_or_add(struct string_table *t, const char *s)
{
    uint64_t key = t->key(s);
    for (const struct wsl_u64_slot *sl = wsl_u64_map_find(&t->index, key); sl; sl = wsl_u64_map_find_next(&t->index, sl)) {
        t->compares++;
        if (strcmp(t->items[sl->value], s) == 0)
            return sl->value;
    }
    t->items = realloc(t->items, (t->count + 1) * sizeof *t->items);
    t->items[t->count] = strdup(s);
    wsl_u64_map_insert(&t->index, key, t->count);
    return t->count++;
}

static void table_free(struct string_table *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->items[i]);
    free(t->items);
    wsl_u64_map_free(&t->index);
}

int test_map_strings(void)
{
    /* FNV-1a's published vectors; a key is never 0; parts chain into the whole */
    CHECK(wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, "", 0) == 0xcbf29ce484222325u);
    CHECK(wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, "a", 1) == 0xaf63dc4c8601ec8cu);
    CHECK(wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, "foobar", 6) == 0x85944171f73967e8u);
    CHECK(wsl_u64_map_string_key("foobar", 6) == 0x85944171f73967e8u);
    CHECK(wsl_u64_map_hash_key(0) != 0 && wsl_u64_map_hash_key(42) == 42);
    CHECK(wsl_u64_map_hash_more(wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, "foo", 3), "bar", 3) ==
          wsl_u64_map_string_key("foobar", 6));
    CHECK(wsl_u64_map_string_key("ab", 2) != wsl_u64_map_string_key("ab", 1)); /* the length counts */

    enum { WORDS = 3000, DRAWS = 20000 };
    char (*words)[24] = malloc(WORDS * sizeof *words);
    size_t *first = malloc(WORDS * sizeof *first);
    CHECK(words && first);
    rng_seed(41);
    for (size_t i = 0; i < WORDS; i++) { /* distinct: the number is in the text; prefixes of each other too */
        if (i % 7)
            snprintf(words[i], sizeof words[i], "k%zu_%llx", i, (unsigned long long)rng_below(1000));
        else
            snprintf(words[i], sizeof words[i], "k%zu", i / 7);
    }
    for (unsigned mode = 0; mode < 2; mode++) {
        struct string_table t = {.key = mode ? same_key : real_key};
        size_t words_used = mode ? 300 : WORDS; /* one shared key: every lookup walks them all */
        for (size_t i = 0; i < words_used; i++)
            first[i] = SIZE_MAX;
        for (size_t d = 0; d < DRAWS; d++) {
            size_t w = (size_t)rng_below(words_used);
            char copy[24];
            memcpy(copy, words[w], sizeof copy); /* another pointer to the same text */
            size_t idx = table_find_or_add(&t, copy);
            if (first[w] == SIZE_MAX) {
                CHECKF(idx == t.count - 1, "mode %u: new word %zu got %zu of %zu", mode, w, idx, t.count);
                first[w] = idx;
            } else {
                CHECKF(idx == first[w], "mode %u: word %zu got %zu, first %zu", mode, w, idx, first[w]);
            }
            CHECK(strcmp(t.items[idx], words[w]) == 0);
        }
        size_t distinct = 0;
        for (size_t i = 0; i < words_used; i++)
            distinct += first[i] != SIZE_MAX;
        CHECK(t.count == distinct && t.index.count == distinct);
        CHECK_MAP(&t.index);
        if (mode == 0) /* real hashes: almost every lookup compares once */
            CHECKF(t.compares < DRAWS + DRAWS / 100, "%zu compares for %d lookups", t.compares, (int)DRAWS);
        else /* one hash for all: the walk reached every entry until it found the one */
            CHECK(t.compares > (size_t)DRAWS * 50);
        table_free(&t);
    }
    free(words);
    free(first);
    return 0;
}
