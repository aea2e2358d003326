#include "u64_map.h"

#include <stdbool.h>
#include <stdlib.h>

#include "util.h"

void wsl_u64_map_grow(struct wsl_u64_map *m)
{
    size_t old_size = m->size;
    struct wsl_u64_slot *old = m->slots;
    m->size = old_size ? 2 * old_size : 64;
    m->shift = old_size ? m->shift - 1 : 64 - 6;
    m->limit = m->dense ? m->size / 4 * 3 : m->size / 2;
    m->slots = xcalloc(m->size, sizeof *m->slots);
    for (size_t i = 0; i < old_size; i++)
        if (old[i].key) {
            size_t s = wsl_u64_map_home(m, old[i].key);
            while (m->slots[s].key)
                s = (s + 1) & (m->size - 1);
            m->slots[s] = old[i];
        }
    free(old);
}

void wsl_u64_map_remove(struct wsl_u64_map *m, struct wsl_u64_slot *slot)
{
    size_t mask = m->size - 1, hole = (size_t)(slot - m->slots);
    m->slots[hole].key = 0;
    m->count--;
    for (size_t s = (hole + 1) & mask; m->slots[s].key; s = (s + 1) & mask) {
        size_t home = wsl_u64_map_home(m, m->slots[s].key);
        /* the entry at s may move into the hole unless its home lies in (hole, s] cyclically */
        bool in_between = hole <= s ? (home > hole && home <= s) : (home > hole || home <= s);
        if (!in_between) {
            m->slots[hole] = m->slots[s];
            m->slots[s].key = 0;
            hole = s;
        }
    }
}

static int by_key(const void *a, const void *b)
{
    const struct wsl_u64_slot *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

struct wsl_u64_slot *wsl_u64_map_sorted(const struct wsl_u64_map *m)
{
    struct wsl_u64_slot *out = xmalloc((m->count ? m->count : 1) * sizeof *out);
    size_t n = 0;
    for (size_t i = 0; i < m->size; i++)
        if (m->slots[i].key)
            out[n++] = m->slots[i];
    qsort(out, n, sizeof *out, by_key);
    return out;
}

void wsl_u64_map_free(struct wsl_u64_map *m)
{
    free(m->slots);
    *m = (struct wsl_u64_map){.dense = m->dense};
}
