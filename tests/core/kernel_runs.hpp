// How the kernel tests run a product: on a chosen instruction set, and on a chosen number of
// cores; each puts back what was in use.
#pragma once

#include "core/attention/kernels.hpp"

#include <gtest/gtest.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {

// Runs f() with the kernels on `isa`, then puts back the one in use.
template <class F>
void withKernels(KernelIsa isa, const F& f) {
    const KernelIsa before = kernelIsa();
    ASSERT_EQ(useKernelIsa(isa), isa);
    f();
    useKernelIsa(before);
}

// Runs f() with the parallel regions on `threads` cores (as they are when 0), then puts back the
// count before.
template <class F>
void onCores(int threads, const F& f) {
#ifdef _OPENMP
    const int before = omp_get_max_threads();
    if (threads > 0) omp_set_num_threads(threads);
    f();
    omp_set_num_threads(before);
#else
    (void)threads;
    f();
#endif
}

}  // namespace attnviz::core
