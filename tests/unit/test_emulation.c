/* The emulation SPEC parser shared by the shim and --project (wslshim/emulation.h). */
#include <string.h>

#include "unit_test.h"
#include "wslshim/emulation.h"

static int parses(const char *spec, struct wsl_emu_spec *s)
{
    char err[256];
    return wsl_emu_parse(spec, s, err, sizeof err) == 0;
}

static int refused(const char *spec, const char *says)
{
    struct wsl_emu_spec s;
    char err[256] = "";
    return wsl_emu_parse(spec, &s, err, sizeof err) != 0 && strstr(err, says) != NULL;
}

int test_emulation_spec(void)
{
    struct wsl_emu_spec s;
    CHECK(parses("launch=+8us,sync=20us,alloc=1ms", &s));
    CHECK(s.ns[WSL_EMU_LAUNCH] == 8000 && s.ns[WSL_EMU_SYNC] == 20000 && s.ns[WSL_EMU_ALLOC] == 1000000);
    CHECK(s.ns[WSL_EMU_FREE] == 1000000 && s.fs.count == 0); /* alloc sets free */
    CHECK(parses("wsl2", &s) && s.ns[WSL_EMU_LAUNCH] == WSL_EMU_WSL2_LAUNCH_NS && s.fs.count == 0);

    /* fs: the 9p figures unless given; trailing '/' dropped; "/" matches every path */
    CHECK(parses("wsl2,fs:/data/=9p,fs:/mnt/c=9p", &s));
    CHECK(s.ns[WSL_EMU_LAUNCH] == WSL_EMU_WSL2_LAUNCH_NS && s.fs.count == 2);
    CHECK(!strcmp(s.fs.prefix[0], "/data") && s.fs.len[0] == 5 && !strcmp(s.fs.prefix[1], "/mnt/c"));
    CHECK(s.fs.meta_ns == WSL_EMU_9P_META_NS && s.fs.read_bps == WSL_EMU_9P_READ_BPS &&
          s.fs.write_bps == WSL_EMU_9P_WRITE_BPS);
    CHECK(parses("fs:/d=9p,fsmeta=+250us,fsread=1GiB/s,fswrite=100MB/s", &s));
    CHECK(s.fs.meta_ns == 250000 && s.fs.read_bps == 1073741824ull && s.fs.write_bps == 100000000ull);
    CHECK(parses("fs:/=9p", &s) && s.fs.count == 1 && s.fs.len[0] == 0);
    CHECK(wsl_emu_fs_match(&s.fs, "/etc/passwd", 11));

    CHECK(parses("fs:/data=9p", &s));
    CHECK(wsl_emu_fs_match(&s.fs, "/data", 5));
    CHECK(wsl_emu_fs_match(&s.fs, "/data/x/y", 9));
    CHECK(!wsl_emu_fs_match(&s.fs, "/database", 9)); /* a sibling that starts alike */
    CHECK(!wsl_emu_fs_match(&s.fs, "/dat", 4));

    /* paths joined and "."/".." removed by name */
    char out[64];
    size_t n = wsl_emu_path_join(out, sizeof out, "/home/u", 7, "../../data/./a/../b");
    CHECK(n == 7 && !strcmp(out, "/data/b"));
    n = wsl_emu_path_join(out, sizeof out, "/x", 2, "/data//f");
    CHECK(n == 7 && !strcmp(out, "/data/f"));
    n = wsl_emu_path_join(out, sizeof out, "/", 1, "..");
    CHECK(n == 1 && !strcmp(out, "/"));
    CHECK(wsl_emu_path_join(out, 8, "/", 1, "longer/than/eight") == 0);

    CHECK(refused("fs:data=9p", "absolute"));
    CHECK(refused("fs:/data=ntfs", "9p"));
    CHECK(refused("fsmeta=+1ms", "need an fs:PATH=9p"));
    CHECK(refused("fs:/d=9p,fsread=fast", "rate"));
    CHECK(refused("fs:/d=9p,fsread=0", "rate"));
    CHECK(refused("launch=1us,fs:/data", "fs:PATH=9p"));
    CHECK(refused("launch=-1us", "cost"));
    CHECK(refused("fs:/a=9p,fs:/b=9p,fs:/c=9p,fs:/d=9p,fs:/e=9p,fs:/f=9p,fs:/g=9p,fs:/h=9p,fs:/i=9p", "at most"));
    return 0;
}
