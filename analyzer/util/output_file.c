/* Output files of wslshim-report: atomic for regular files, in place for the rest (output_file.h). */
#define _GNU_SOURCE
#include "output_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char *wsl_output_name(const struct wsl_output *o) { return o->is_stdout ? "stdout" : o->path; }

int wsl_output_open(struct wsl_output *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    if (strcmp(path, "-") == 0) {
        o->is_stdout = true;
        o->f = stdout;
        return 0;
    }
    struct stat st;
    /* lstat: a symbolic link is written through, not replaced by a regular file. */
    bool replace = lstat(path, &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode);
    if (replace) {
        o->tmp = xasprintf("%s.tmp-%d", path, (int)getpid());
        o->f = fopen(o->tmp, "w");
    } else {
        /* "w" truncates a regular file behind a symlink; a device or FIFO it leaves as it is. */
        o->f = fopen(path, "w");
    }
    if (!o->f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

int wsl_output_close(struct wsl_output *o, bool ok, char *err, size_t errlen)
{
    int earlier = errno; /* a failed write's reason, when the buffer it left is gone */
    int saved = 0;
    errno = 0;
    if (fflush(o->f) != 0)
        saved = errno ? errno : EIO;
    else if (ferror(o->f))
        saved = earlier ? earlier : EIO;
    if (!o->is_stdout && fclose(o->f) != 0 && !saved)
        saved = errno ? errno : EIO;
    o->f = NULL;
    int rc = 0;
    if (saved) {
        snprintf(err, errlen, "%s: write error: %s", wsl_output_name(o), strerror(saved));
        rc = -1;
    }
    if (o->tmp) {
        if (ok && rc == 0 && rename(o->tmp, o->path) != 0) {
            snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(errno));
            rc = -1;
        }
        if (!ok || rc != 0)
            unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}
