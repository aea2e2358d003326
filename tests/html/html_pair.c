/*
 * html_pair: the HTML writer with two runs side by side, as --compare will
 * call it (report_html.h), for html_check.py's two_runs case.
 *
 *   html_pair TRACE_A TRACE_B > page.html
 *
 * Each trace is one run (labels "A: <trace>" and "B: <trace>"); an extra
 * section (the hook a comparison uses) writes one paragraph.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "rules.h"
#include "report_html.h"

static void extra(FILE *out, const struct wsl_html_run *runs, size_t count, void *arg)
{
    (void)arg;
    fprintf(out, "<section id=\"compare\"><h2>Comparison</h2><p>%zu runs: ", count);
    wsl_html_escape(out, runs[0].label);
    fputs(" against ", out);
    wsl_html_escape(out, runs[1].label);
    fputs("</p></section>\n", out);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: html_pair TRACE_A TRACE_B\n");
        return 2;
    }
    struct wsl_run run[2];
    struct wsl_html_series series[2];
    struct wsl_html_run page[2];
    char label[2][512];
    for (int i = 0; i < 2; i++) {
        char err[512];
        wsl_run_init(&run[i]);
        if (wsl_run_add_trace(&run[i], argv[1 + i], err, sizeof err) != 0) {
            fprintf(stderr, "html_pair: %s: %s\n", argv[1 + i], err);
            return 2;
        }
        wsl_run_finish(&run[i]);
        if (wsl_html_series_build(&run[i], &series[i], NULL, err, sizeof err) != 0) {
            fprintf(stderr, "html_pair: %s\n", err);
            return 2;
        }
        snprintf(label[i], sizeof label[i], "%c: %s", 'A' + i, argv[1 + i]);
        page[i] = (struct wsl_html_run){.label = label[i], .run = &run[i], .series = &series[i]};
    }
    struct wsl_html_options opt = {.title = "wslshim comparison", .extra_section = extra};
    wsl_html_write(stdout, page, 2, &opt);
    for (int i = 0; i < 2; i++)
        wsl_run_free(&run[i]);
    return fflush(stdout) == 0 ? 0 : 1;
}
