/* The median of n doubles (v reordered), for the benchmarks' programs (tests/bench, tests/io). */
#ifndef WSLSHIM_TESTS_MEDIAN_H
#define WSLSHIM_TESTS_MEDIAN_H

#include <stdlib.h>

static int median_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, median_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
