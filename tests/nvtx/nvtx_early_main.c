/* Links nvtx_early_lib, whose constructor pushes a range before main runs. */
#include <stdio.h>

int early_lib_push(const char *name);
int early_lib_pop(void);

int main(void)
{
    int a = early_lib_push("main_range");
    int b = early_lib_pop();
    printf("%d %d\n", a, b);
    return 0;
}
