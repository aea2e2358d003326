/*
 * A hash table from non-zero 64-bit keys (pointers, handles, ids) to 64-bit
 * values: open addressing, linear probing, deletion by backward shift. Used by
 * the per-process tables of the memory and kernel analyses.
 */
#ifndef WSLSHIM_U64_MAP_H
#define WSLSHIM_U64_MAP_H

#include <stddef.h>
#include <stdint.h>

struct wsl_u64_slot {
    uint64_t key;   /* 0: empty */
    uint64_t value;
};

struct wsl_u64_map {
    struct wsl_u64_slot *slots;
    size_t size, count; /* size: a power of two, or 0 */
};

/* The slot of key's probe sequence to start from (exposed for the inline find). */
static inline size_t wsl_u64_key_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

/* The slot holding key, or NULL. Inline: the analyses look a key up per event. */
static inline struct wsl_u64_slot *wsl_u64_map_find(const struct wsl_u64_map *m, uint64_t key)
{
    if (!m->size)
        return NULL;
    size_t mask = m->size - 1;
    for (size_t s = wsl_u64_key_hash(key) & mask; m->slots[s].key; s = (s + 1) & mask)
        if (m->slots[s].key == key)
            return &m->slots[s];
    return NULL;
}
/* Inserts key (not 0, not present) -> value. */
void wsl_u64_map_insert(struct wsl_u64_map *m, uint64_t key, uint64_t value);
/* Removes a slot that wsl_u64_map_find returned. */
void wsl_u64_map_remove(struct wsl_u64_map *m, struct wsl_u64_slot *slot);
void wsl_u64_map_free(struct wsl_u64_map *m);

#endif
