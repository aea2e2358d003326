#include "u64_map.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void map_grow(struct wsl_u64_map *m)
{
    size_t size = m->size ? 2 * m->size : 64, old_size = m->size;
    struct wsl_u64_slot *old = m->slots;
    m->slots = xcalloc(size, sizeof *m->slots);
    m->size = size;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].key) {
            size_t s = wsl_u64_key_hash(old[i].key) & (size - 1);
            while (m->slots[s].key)
                s = (s + 1) & (size - 1);
            m->slots[s] = old[i];
        }
    free(old);
}

void wsl_u64_map_insert(struct wsl_u64_map *m, uint64_t key, uint64_t value)
{
    if (2 * (m->count + 1) > m->size)
        map_grow(m);
    size_t mask = m->size - 1, s = wsl_u64_key_hash(key) & mask;
    while (m->slots[s].key)
        s = (s + 1) & mask;
    m->slots[s].key = key;
    m->slots[s].value = value;
    m->count++;
}

void wsl_u64_map_remove(struct wsl_u64_map *m, struct wsl_u64_slot *slot)
{
    size_t mask = m->size - 1, hole = (size_t)(slot - m->slots);
    m->slots[hole].key = 0;
    m->count--;
    for (size_t s = (hole + 1) & mask; m->slots[s].key; s = (s + 1) & mask) {
        size_t home = wsl_u64_key_hash(m->slots[s].key) & mask;
        /* the entry at s may move into the hole unless its home lies in (hole, s] cyclically */
        bool in_between = hole <= s ? (home > hole && home <= s) : (home > hole || home <= s);
        if (!in_between) {
            m->slots[hole] = m->slots[s];
            m->slots[s].key = 0;
            hole = s;
        }
    }
}

void wsl_u64_map_free(struct wsl_u64_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
