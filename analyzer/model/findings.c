/* Findings: severity, evidence and freeing (findings.h). */
#include "findings.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *wsl_severity_name(enum wsl_severity s)
{
    return s == WSL_SEVERITY_HIGH ? "high" : s == WSL_SEVERITY_MEDIUM ? "medium" : "low";
}

enum wsl_severity wsl_severity_of(uint64_t time_lost_ns, uint64_t wall_ns)
{
    if (wall_ns == 0)
        return WSL_SEVERITY_LOW;
    double share = (double)time_lost_ns / (double)wall_ns;
    return share >= WSL_SEVERITY_HIGH_SHARE ? WSL_SEVERITY_HIGH
         : share >= WSL_SEVERITY_MEDIUM_SHARE ? WSL_SEVERITY_MEDIUM : WSL_SEVERITY_LOW;
}

static struct wsl_evidence *evidence_add(struct wsl_finding *f, const char *key, enum wsl_evidence_type type)
{
    f->evidence = xrealloc(f->evidence, (f->evidence_count + 1) * sizeof *f->evidence);
    struct wsl_evidence *e = &f->evidence[f->evidence_count++];
    memset(e, 0, sizeof *e);
    e->key = xstrdup(key);
    e->type = type;
    return e;
}

void wsl_evidence_u64(struct wsl_finding *f, const char *key, uint64_t v)
{
    evidence_add(f, key, WSL_EVIDENCE_U64)->u64 = v;
}

void wsl_evidence_number(struct wsl_finding *f, const char *key, double v)
{
    evidence_add(f, key, WSL_EVIDENCE_NUMBER)->number = v;
}

void wsl_evidence_bool(struct wsl_finding *f, const char *key, bool v)
{
    evidence_add(f, key, WSL_EVIDENCE_BOOL)->flag = v;
}

void wsl_evidence_string(struct wsl_finding *f, const char *key, const char *s)
{
    evidence_add(f, key, WSL_EVIDENCE_STRING)->string = xstrdup(s);
}

void wsl_evidence_list_add(struct wsl_finding *f, const char *key, const char *s)
{
    struct wsl_evidence *e = NULL;
    for (size_t i = 0; i < f->evidence_count && !e; i++)
        if (f->evidence[i].type == WSL_EVIDENCE_STRINGS && strcmp(f->evidence[i].key, key) == 0)
            e = &f->evidence[i];
    if (!e)
        e = evidence_add(f, key, WSL_EVIDENCE_STRINGS);
    e->strings = xrealloc(e->strings, (e->string_count + 1) * sizeof *e->strings);
    e->strings[e->string_count++] = xstrdup(s);
}

static void finding_free(struct wsl_finding *f)
{
    free(f->summary);
    free(f->advice);
    for (size_t i = 0; i < f->evidence_count; i++) {
        struct wsl_evidence *e = &f->evidence[i];
        free(e->key);
        free(e->string);
        for (size_t k = 0; k < e->string_count; k++)
            free(e->strings[k]);
        free(e->strings);
    }
    free(f->evidence);
}

void wsl_findings_free_one(struct wsl_finding *f)
{
    finding_free(f);
}

void wsl_findings_free(struct wsl_finding *findings, size_t count)
{
    for (size_t i = 0; i < count; i++)
        finding_free(&findings[i]);
    free(findings);
}

