/* A second interposer preloaded after libwslshim.so: its puts() forwards with
 * dlsym(RTLD_NEXT, "puts"). That lookup is relative to this library only if the
 * shim's dlsym wrapper passes RTLD_NEXT on as a tail call; otherwise it would
 * find this very puts again and recurse until the stack overflows. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int puts(const char *s)
{
    int (*next)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
    if (!next || next == puts)
        return -1;
    fputs("[wrapped] ", stdout);
    return next(s);
}
