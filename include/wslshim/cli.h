/*
 * The command-line conventions every wslshim program shares (header only, so
 * the launcher, the report and the probes use the same code without linking a
 * library): getopt_long with opterr off, so that a bad option is one line of
 * ours on stderr (exit 2, never getopt's own two-line message); --version; and
 * when to colour text.
 *
 *   static const struct option longopts[] = {...};
 *   int c;
 *   while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
 *       switch (c) {
 *       ...
 *       case ':': case '?':
 *           cli_option_error(PROG, c, argv); // exit 2
 *       }
 *   }
 *
 * The optstring must start with ':' (after a '+', where options end at the
 * first operand) so that a missing value comes back as ':'.
 */
#ifndef WSLSHIM_CLI_H
#define WSLSHIM_CLI_H
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef WSLSHIM_VERSION
#define WSLSHIM_VERSION "unknown"
#endif

/* The option getopt_long stopped at, as the user wrote it (without "=value"). */
static inline void cli_option_name(char *const *argv, char *buf, size_t size)
{
    const char *a = optind >= 1 ? argv[optind - 1] : "";
    if (strncmp(a, "--", 2) != 0 && optopt > ' ' && optopt < 127) {
        snprintf(buf, size, "-%c", optopt);
        return;
    }
    size_t n = strcspn(a, "=");
    snprintf(buf, size, "%.*s", (int)(n < 200 ? n : 200), a);
}

/* getopt_long returned '?' (unknown option, or a value given to one that takes none)
 * or ':' (no value): one line on stderr, exit 2. */
__attribute__((noreturn)) static inline void cli_option_error(const char *prog, int c, char *const *argv)
{
    char name[256];
    cli_option_name(argv, name, sizeof name);
    if (c == ':')
        fprintf(stderr, "%s: option '%s' needs a value (see --help)\n", prog, name);
    else if (optind >= 1 && strncmp(argv[optind - 1], "--", 2) == 0 && strchr(argv[optind - 1], '=') && optopt)
        fprintf(stderr, "%s: option '%s' takes no value, or is unknown (see --help)\n", prog, name);
    else
        fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, name);
    exit(2);
}

/* A usage error or unreadable input: "prog: message" and suffix (one line) on stderr, exit 2. */
__attribute__((noreturn, format(printf, 3, 0))) static inline void cli_vfail(const char *prog, const char *suffix,
                                                                            const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "%s\n", suffix);
    exit(2);
}

static inline int cli_print_version(const char *prog)
{
    printf("%s %s\n", prog, WSLSHIM_VERSION);
    return 0;
}

/* Colour on stream fd when asked for "auto": a terminal, NO_COLOR unset or empty
 * (no-color.org), and a terminal that knows colours (TERM set and not "dumb"). */
static inline bool cli_auto_color(int fd)
{
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fd) && !(no_color && *no_color) && term && *term && strcmp(term, "dumb") != 0;
}
#endif /* WSLSHIM_CLI_H */
