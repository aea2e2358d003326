/*
 * The analyzer's hash map: 64-bit keys (not 0) to 64-bit values, open
 * addressing in a power-of-two array (at most half full, or 3/4 where dense;
 * doubled from 64 slots), linear probing from the key's home slot (Fibonacci hashing: the top
 * bits of key * 2^64/phi), deletion by backward shift (no tombstones).
 *
 * Two kinds of key:
 * - a number: a pointer, handle or id (tid + 1, fd + 1 where they may be 0);
 *   wsl_u64_map_find, _insert, _remove.
 * - a string or any other key the caller stores itself: the map holds its
 *   hash (wsl_u64_map_string_key, or wsl_u64_map_hash_more steps ended by
 *   wsl_u64_map_hash_key) and, as the value, where the caller keeps the key
 *   (an index into its array). Different keys may share a hash: a lookup
 *   walks the slots holding the hash, wsl_u64_map_find then
 *   wsl_u64_map_find_next, and compares the keys itself:
 *
 *       uint64_t h = wsl_u64_map_string_key(name, strlen(name));
 *       for (s = wsl_u64_map_find(&m, h); s; s = wsl_u64_map_find_next(&m, s))
 *           if (strcmp(items[s->value].name, name) == 0)
 *               return s->value;
 *       wsl_u64_map_insert(&m, h, new_index);
 *
 * The order of the slots follows from the keys, their insertion and removal
 * order alone (the same on every machine), but it is no order to print: what
 * lists a map's entries takes them sorted (wsl_u64_map_sorted).
 */
#ifndef WSLSHIM_U64_MAP_H
#define WSLSHIM_U64_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wsl_u64_slot {
    uint64_t key;   /* 0: empty */
    uint64_t value;
};

struct wsl_u64_map {
    struct wsl_u64_slot *slots;
    size_t size, count; /* size: a power of two, or 0 (nothing allocated yet) */
    size_t limit;       /* the count at which the next insert doubles the slots */
    unsigned shift;     /* 64 - log2(size) */
    bool dense;         /* up to 3/4 full, not 1/2: less memory, longer probes (set it on
                           an empty map; it stays through wsl_u64_map_free) */
};

/* The slot key's probe sequence starts from. The product's top bits: every
 * bit of the key reaches them (keys that differ in their low bits, as ids do,
 * or only in their middle bits, as aligned pointers do, spread evenly). */
static inline size_t wsl_u64_map_home(const struct wsl_u64_map *m, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* The first slot holding key, or NULL. Inline: the analyses look a key up per event. */
static inline struct wsl_u64_slot *wsl_u64_map_find(const struct wsl_u64_map *m, uint64_t key)
{
    if (!m->size)
        return NULL;
    size_t mask = m->size - 1;
    for (size_t s = wsl_u64_map_home(m, key); m->slots[s].key; s = (s + 1) & mask)
        if (m->slots[s].key == key)
            return &m->slots[s];
    return NULL;
}

/* The next slot after `slot` (from _find or _find_next) holding the same key,
 * or NULL: the other entries of a hash that several keys share. An insert or
 * a removal ends the walk (slots move). */
static inline struct wsl_u64_slot *wsl_u64_map_find_next(const struct wsl_u64_map *m, const struct wsl_u64_slot *slot)
{
    size_t mask = m->size - 1;
    uint64_t key = slot->key;
    for (size_t s = ((size_t)(slot - m->slots) + 1) & mask; m->slots[s].key; s = (s + 1) & mask)
        if (m->slots[s].key == key)
            return &m->slots[s];
    return NULL;
}

/* Doubles the slots (from 64): the out-of-line part of the inserts below. */
void wsl_u64_map_grow(struct wsl_u64_map *m);

/* Inserts key (not 0) -> value; returns its slot. A number key must not be
 * present already (find first, or use _find_or_add); a hash key may be, for
 * another key of the same hash. Slot pointers from before it are stale. */
static inline struct wsl_u64_slot *wsl_u64_map_insert(struct wsl_u64_map *m, uint64_t key, uint64_t value)
{
    if (m->count >= m->limit)
        wsl_u64_map_grow(m);
    size_t mask = m->size - 1, s = wsl_u64_map_home(m, key);
    while (m->slots[s].key)
        s = (s + 1) & mask;
    m->slots[s].key = key;
    m->slots[s].value = value;
    m->count++;
    return &m->slots[s];
}

/* The slot of number key (not 0); when absent, inserted with value and
 * *added set (one probe where find then insert take two). Same slots as
 * find then insert would give. */
static inline struct wsl_u64_slot *wsl_u64_map_find_or_add(struct wsl_u64_map *m, uint64_t key, uint64_t value,
                                                          bool *added)
{
    if (m->count < m->limit) {
        size_t mask = m->size - 1, s = wsl_u64_map_home(m, key);
        for (; m->slots[s].key; s = (s + 1) & mask)
            if (m->slots[s].key == key) {
                *added = false;
                return &m->slots[s];
            }
        m->slots[s].key = key;
        m->slots[s].value = value;
        m->count++;
        *added = true;
        return &m->slots[s];
    }
    struct wsl_u64_slot *s = wsl_u64_map_find(m, key); /* the insert would grow the map */
    *added = !s;
    return s ? s : wsl_u64_map_insert(m, key, value);
}

/* Removes a slot that wsl_u64_map_find (or _find_next) returned; other slot
 * pointers are stale after it (entries move back into the hole). */
void wsl_u64_map_remove(struct wsl_u64_map *m, struct wsl_u64_slot *slot);
/* The entries (m->count of them), by key, in a new array (free it): the order
 * to list a map in. */
struct wsl_u64_slot *wsl_u64_map_sorted(const struct wsl_u64_map *m);
/* Frees the slots; the map is empty and usable again. */
void wsl_u64_map_free(struct wsl_u64_map *m);

/* ---- hashes for keys the map does not hold itself ---- */

#define WSL_U64_MAP_HASH_START 0xcbf29ce484222325u /* FNV-1a's offset basis */

/* h advanced over n bytes (FNV-1a): start from WSL_U64_MAP_HASH_START, chain
 * the parts of a key (each part's length must be part of what is hashed, e.g.
 * its terminating 0, so "a","bc" and "ab","c" differ), end with _hash_key. */
static inline uint64_t wsl_u64_map_hash_more(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

/* A hash as a map key: never 0 (0 marks an empty slot). */
static inline uint64_t wsl_u64_map_hash_key(uint64_t h) { return h ? h : 1; }

/* The key of the n bytes at s (a string without its 0, or any bytes). */
static inline uint64_t wsl_u64_map_string_key(const char *s, size_t n)
{
    return wsl_u64_map_hash_key(wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, s, n));
}

#endif
