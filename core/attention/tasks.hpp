// Loops of tasks whose bodies may run parallel regions of their own (a product that shares its
// rows among the cores, a packing, a softmax).
#pragma once

#include <Eigen/Core>

namespace attnviz::core {

// Runs body(i) for every i in [0, n): as tasks the cores take one at a time when there are two
// or more, else on the calling thread, where a parallel region inside the body has every core.
//
// Not `#pragma omp parallel for if (n > 1)`: a region its if clause leaves inactive still encloses
// the body, so a parallel region inside it is a nested one, and libgomp starts a nested team on
// threads of its own beside the pool's. Where workers spin before they sleep (libgomp's default,
// which `--bench` and the exports keep) the pool's idle threads then spin on the cores that team
// needs: three products [2048, 256] · [256, 256] inside such a region took 14.0 ms on average,
// called directly 6.0 ms (Zen 4, 2 cores; 7.1 against 6.2 ms with sleeping workers).
template <class Body>
void forEachTask(Eigen::Index n, const Body& body) {
    if (n <= 1) {
        if (n == 1) body(Eigen::Index{0});
        return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (Eigen::Index i = 0; i < n; ++i) body(i);
}

}  // namespace attnviz::core
