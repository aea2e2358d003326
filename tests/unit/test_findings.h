/* Looking up a run's findings and their evidence in unit tests. */
#ifndef WSLSHIM_TEST_FINDINGS_H
#define WSLSHIM_TEST_FINDINGS_H

#include <string.h>

#include "analysis.h"

/* The finding of rule `id`, or NULL when it did not fire. */
static inline const struct wsl_finding *finding(const struct wsl_run *run, const char *id)
{
    for (size_t i = 0; i < run->finding_count; i++)
        if (strcmp(run->findings[i].id, id) == 0)
            return &run->findings[i];
    return NULL;
}

/* The evidence `key` of a finding, or NULL. */
static inline const struct wsl_evidence *evidence(const struct wsl_finding *f, const char *key)
{
    for (size_t i = 0; i < f->evidence_count; i++)
        if (strcmp(f->evidence[i].key, key) == 0)
            return &f->evidence[i];
    return NULL;
}

#endif
