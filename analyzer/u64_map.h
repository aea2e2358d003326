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

/* The slot holding key, or NULL. */
struct wsl_u64_slot *wsl_u64_map_find(const struct wsl_u64_map *m, uint64_t key);
/* Inserts key (not 0, not present) -> value. */
void wsl_u64_map_insert(struct wsl_u64_map *m, uint64_t key, uint64_t value);
/* Removes a slot that wsl_u64_map_find returned. */
void wsl_u64_map_remove(struct wsl_u64_map *m, struct wsl_u64_slot *slot);
void wsl_u64_map_free(struct wsl_u64_map *m);

#endif
