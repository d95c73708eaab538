// forEachTask: every task once, and a single task on the calling thread, so that the parallel
// regions inside it are not nested ones.
#include "core/attention/tasks.hpp"
#include "tests/core/kernel_runs.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {
namespace {

TEST(Tasks, EveryTaskRunsOnce) {
    for (const int cores : {1, 2, 5}) {
        for (const Eigen::Index n : {0, 1, 2, 7, 100}) {
            std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n));
            onCores(cores, [&] { forEachTask(n, [&](Eigen::Index i) { ++runs[static_cast<std::size_t>(i)]; }); });
            for (Eigen::Index i = 0; i < n; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)], 1) << "task " << i << " of " << n;
        }
    }
}

#ifdef _OPENMP
TEST(Tasks, ASingleTasksParallelRegionIsTheOutermostAndHasEveryCore) {
    // `#pragma omp parallel for if (n > 1)` would run the one task inside an inactive region:
    // the product inside would then be a nested region (level 2) on a team of its own.
    int level = -1, threads = 0;
    onCores(3, [&] {
        forEachTask(1, [&](Eigen::Index) {
#pragma omp parallel
            {
#pragma omp single
                {
                    level = omp_get_level();
                    threads = omp_get_num_threads();
                }
            }
        });
    });
    EXPECT_EQ(level, 1);
    EXPECT_EQ(threads, 3);
}

TEST(Tasks, SeveralTasksShareTheCores) {
    std::vector<std::atomic<int>> byThread(4);
    onCores(4, [&] {
        forEachTask(64, [&](Eigen::Index) {
            EXPECT_EQ(omp_get_level(), 1);
            ++byThread[static_cast<std::size_t>(omp_get_thread_num())];
        });
    });
    int total = 0;
    for (const auto& n : byThread) total += n;
    EXPECT_EQ(total, 64);
}
#endif

}  // namespace
}  // namespace attnviz::core
