/*
 * Findings, part of the run model: a bottleneck found in a run (struct wsl_finding), its
 * evidence and its severity. The rules (rules/) make them; the run model keeps them
 * (wsl_run.findings, a rank's findings) and the outputs print them.
 */
#ifndef WSLSHIM_FINDINGS_H
#define WSLSHIM_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wsl_severity { WSL_SEVERITY_LOW, WSL_SEVERITY_MEDIUM, WSL_SEVERITY_HIGH };

#define WSL_SEVERITY_HIGH_SHARE 0.20    /* time lost >= 20% of wall time */
#define WSL_SEVERITY_MEDIUM_SHARE 0.05  /* >= 5% */

enum wsl_evidence_type { WSL_EVIDENCE_U64, WSL_EVIDENCE_NUMBER, WSL_EVIDENCE_BOOL, WSL_EVIDENCE_STRING,
                         WSL_EVIDENCE_STRINGS };

struct wsl_evidence {           /* one key of a finding's "evidence" object */
    char *key;
    enum wsl_evidence_type type;
    uint64_t u64;
    double number;
    bool flag;
    char *string;
    char **strings;
    size_t string_count;
};

struct wsl_finding {
    const char *id;             /* the rule's id, e.g. "cross_os_reads" */
    enum wsl_severity severity;
    bool severity_fixed;        /* set by the rule (risk rules): the framework keeps it */
    uint64_t time_lost_ns;      /* at most the run's wall time */
    char *summary;              /* one sentence with the numbers */
    char *advice;               /* what to do, with commands where there are some */
    const char *how_computed;   /* the rule's method, one paragraph */
    const char *fix;            /* the one-line fix (the summary screen) */
    bool scaled_to_wall;        /* time lost was scaled down so that the CUDA host-time rules sum to <= wall */
    /* The same finding in the steady state alone (wsl_run_finish reads the traces again, restricted to
     * it): its time lost there; steady_fired false: the rule does not fire there (steady_lost_ns 0). */
    bool steady_known, steady_fired;
    uint64_t steady_lost_ns;
    struct wsl_evidence *evidence;
    size_t evidence_count;
};


void wsl_findings_free(struct wsl_finding *findings, size_t count);
void wsl_findings_free_one(struct wsl_finding *f); /* its strings and evidence, not f itself */

const char *wsl_severity_name(enum wsl_severity s);
enum wsl_severity wsl_severity_of(uint64_t time_lost_ns, uint64_t wall_ns);

/* Evidence, in the order added. */
void wsl_evidence_u64(struct wsl_finding *f, const char *key, uint64_t v);
void wsl_evidence_number(struct wsl_finding *f, const char *key, double v);
void wsl_evidence_bool(struct wsl_finding *f, const char *key, bool v);
void wsl_evidence_string(struct wsl_finding *f, const char *key, const char *s);
/* Appends s to the string list `key` (created on first use). */
void wsl_evidence_list_add(struct wsl_finding *f, const char *key, const char *s);

#endif /* WSLSHIM_FINDINGS_H */
