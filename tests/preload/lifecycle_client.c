/*
 * Threads that exit, a forked child, and an exec'd image, each making a known
 * number of driver calls (against the fake driver, linked with -lcuda):
 *   parent:  16 threads x 100 cuCtxSynchronize, then 200 short-lived threads
 *            x 10 cuCtxSynchronize, one after another (buffers are reused);
 *   child:   fork()ed, 50 cuStreamSynchronize, exit(0);
 *   exec:    the parent then execs itself ("exec-stage", with a cleared
 *            environment): 30 cuCtxSynchronize.
 * The test reads each trace and checks these counts process by process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

static void *sync_n(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            abort();
    return NULL;
}

int main(int argc, char **argv)
{
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    if (argc > 1 && !strcmp(argv[1], "exec-stage")) {
        sync_n((void *)30L);
        return 0;
    }
    pthread_t th[16];
    for (int i = 0; i < 16; i++)
        pthread_create(&th[i], NULL, sync_n, (void *)100L);
    for (int i = 0; i < 16; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        pthread_create(&t, NULL, sync_n, (void *)10L);
        pthread_join(t, NULL);
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 50; i++)
            cuStreamSynchronize(NULL);
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    char *args[] = {argv[0], "exec-stage", NULL};
    char *env[] = {NULL};
    execve("/proc/self/exe", args, env);
    perror("execve");
    return 1;
}
