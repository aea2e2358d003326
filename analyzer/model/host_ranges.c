/* The live address ranges (host_ranges.h): a treap keyed by start address. */
#include "host_ranges.h"

#include "util.h"

void wsl_range_tree_init(struct range_tree *t)
{
    t->seed = 0x9e3779b9u;
    t->version = 1;
}

static uint32_t tree_rand(struct range_tree *t)
{
    t->seed ^= t->seed << 13;
    t->seed ^= t->seed >> 17;
    t->seed ^= t->seed << 5;
    return t->seed;
}

/* Splits the subtree n into keys < key (*l) and keys >= key (*r). */
static void tree_split(struct range_tree *t, uint32_t n, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (!n) {
        *l = *r = 0;
        return;
    }
    struct range_node *x = &t->nodes[n];
    if (x->start < key) {
        tree_split(t, x->right, key, &x->right, r);
        *l = n;
    } else {
        tree_split(t, x->left, key, l, &x->left);
        *r = n;
    }
}

static uint32_t tree_merge(struct range_tree *t, uint32_t a, uint32_t b)
{
    if (!a || !b)
        return a ? a : b;
    if (t->nodes[a].prio > t->nodes[b].prio) {
        t->nodes[a].right = tree_merge(t, t->nodes[a].right, b);
        return a;
    }
    t->nodes[b].left = tree_merge(t, a, t->nodes[b].left);
    return b;
}

/* Removes the range starting at start; true when there was one. */
bool wsl_range_tree_remove(struct range_tree *t, uint64_t start)
{
    uint32_t l, mid, r;
    tree_split(t, t->root, start, &l, &mid);
    tree_split(t, mid, start + 1, &mid, &r);
    bool found = mid != 0;
    t->version++;
    if (mid) {                  /* starts are unique: mid is one node */
        t->nodes[mid].left = t->free_list;
        t->free_list = mid;
    }
    t->root = tree_merge(t, l, r);
    return found;
}

void wsl_range_tree_insert(struct range_tree *t, uint64_t start, uint64_t end, uint8_t kind)
{
    wsl_range_tree_remove(t, start); /* an address handed out again without a free we saw; a new version */
    uint32_t n;
    if (t->free_list) {
        n = t->free_list;
        t->free_list = t->nodes[n].left;
    } else {
        if (t->used + 1 >= t->cap) {
            t->cap = t->cap ? 2 * t->cap : 256;
            t->nodes = xrealloc(t->nodes, t->cap * sizeof *t->nodes);
        }
        n = ++t->used;
    }
    struct range_node *x = &t->nodes[n];
    x->start = start;
    x->end = end > start ? end : start + 1;
    x->kind = kind;
    x->left = x->right = 0;
    x->prio = tree_rand(t);
    uint32_t l, r;
    tree_split(t, t->root, start, &l, &r);
    t->root = tree_merge(t, tree_merge(t, l, n), r);
}

/* The kind of the range holding p, 0 when none. The walk also finds the next start above p:
 * up to it the answer depends only on the best range's end, so it is kept for the next finds
 * (a program's copies come from and go to a few buffers, and allocation calls are rare). */
uint8_t wsl_range_tree_find(struct range_tree *t, uint64_t p)
{
    for (unsigned k = 0; k < 2; k++) {
        const struct find_memo *m = &t->memo[k];
        if (m->version == t->version && p >= m->lo && p < m->hi)
            return p < m->end ? m->kind : 0;
    }
    uint32_t n = t->root, best = 0, next = 0;
    while (n) {
        const struct range_node *x = &t->nodes[n];
        if (x->start <= p) {
            best = n;
            n = x->right;
        } else {
            next = n;
            n = x->left;
        }
    }
    struct find_memo *m = &t->memo[t->memo_next];
    t->memo_next ^= 1;
    *m = (struct find_memo){.lo = best ? t->nodes[best].start : 0, .hi = next ? t->nodes[next].start : UINT64_MAX,
                            .end = best ? t->nodes[best].end : 0, .version = t->version,
                            .kind = best ? t->nodes[best].kind : 0};
    return p < m->end ? m->kind : 0;
}
