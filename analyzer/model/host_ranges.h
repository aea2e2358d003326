/*
 * The address ranges live at one moment of a trace (allocations of device, managed and
 * page-locked memory), for the host analysis's classification of copies: a treap keyed by start
 * address, with the last two lookups' answers kept until it changes.
 */
#ifndef WSLSHIM_HOST_RANGES_H
#define WSLSHIM_HOST_RANGES_H

#include <stdbool.h>
#include <stdint.h>

enum range_kind { RANGE_DEVICE = 1, RANGE_MANAGED, RANGE_LOCKED };

struct range_node {
    uint64_t start, end;
    uint32_t prio, left, right;
    uint8_t kind;
};

/* An answer of wsl_range_tree_find that holds for every address in [lo, hi) while the tree is unchanged
 * (version): the range with the greatest start <= p is the same one there, its end decides. */
struct find_memo {
    uint64_t lo, hi, end, version;
    uint8_t kind;
};

struct range_tree {
    struct range_node *nodes;   /* nodes[0] is unused: 0 means "no node" */
    uint32_t used, cap, root, free_list;
    uint32_t seed;
    uint64_t version;           /* changed by each insert and remove; the memos' 0 is never one */
    struct find_memo memo[2];   /* the last two walks' answers: a copy's two pointers */
    unsigned memo_next;
};

/* An empty tree (t zeroed before). */
void wsl_range_tree_init(struct range_tree *t);
/* Adds [start, end) (one byte when end <= start), replacing a range of the same start. */
void wsl_range_tree_insert(struct range_tree *t, uint64_t start, uint64_t end, uint8_t kind);
/* Removes the range starting at start; true when there was one. */
bool wsl_range_tree_remove(struct range_tree *t, uint64_t start);
/* The kind of the range holding p (the one with the greatest start <= p, if p is below its end),
 * 0 when none. */
uint8_t wsl_range_tree_find(struct range_tree *t, uint64_t p);

#endif /* WSLSHIM_HOST_RANGES_H */
