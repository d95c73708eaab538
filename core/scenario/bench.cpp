#include "core/scenario/bench.hpp"

#include "core/attention/tasks.hpp"

#include <chrono>
#include <vector>

namespace attnviz::core {

double forwardFlops(const Model& m) {
    const double tq = static_cast<double>(m.tq()), tk = static_cast<double>(m.tk()), h = m.heads;
    double flops = 2.0 * h * tq * tk * (m.dk + m.dv);
    if (!m.explicitQkv) flops += 2.0 * tq * static_cast<double>(m.x.cols()) * h * (2.0 * m.dk + m.dv);
    if (m.wo.size()) flops += 2.0 * tq * static_cast<double>(m.wo.rows()) * static_cast<double>(m.wo.cols());
    return flops;
}

void reweighAll(const Model& model, const Settings& settings, Forward& forward) {
    forEachTask(static_cast<Eigen::Index>(forward.heads.size()),
                [&](Eigen::Index h) { weighHead(model, settings, forward.heads[static_cast<std::size_t>(h)]); });
}

BenchResult benchmark(const Model& model, const Settings& settings, double seconds) {
    BenchResult r;
    r.tq = model.tq();
    r.tk = model.tk();
    r.heads = model.heads;
    r.dModel = model.dModel;
    Forward forward = runForward(model, settings);  // warm up, and the scores the softmax needs
    // The forward pass and the sgemm ceiling alternate, so that a busy neighbour slows both
    // alike and their ratio stays meaningful.
    constexpr int n = 1024;
    const Mat a = Mat::Random(n, n), b = Mat::Random(n, n);
    Mat c(n, n);
    std::vector<double> forwardMs, sgemmMs;
    const auto start = std::chrono::steady_clock::now();
    while (forwardMs.size() < 5 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
        forwardMs.push_back(medianMs(
            0.0, [&] { runForward(model, settings, forward); }, 1, 1));
        sgemmMs.push_back(medianMs(
            0.0, [&] { c.noalias() = a * b; }, 1, 1));
        if (forwardMs.size() >= 200) break;
    }
    r.runs = static_cast<int>(forwardMs.size());
    r.forwardMs = median(forwardMs);
    r.sgemmGflops = 2.0 * n * n * static_cast<double>(n) / (median(sgemmMs) * 1e6);
    r.gflops = forwardFlops(model) / (r.forwardMs * 1e6);
    r.softmaxMs = medianMs(
        seconds * 0.25, [&] { reweighAll(model, settings, forward); }, 5, 1000);
    r.visibleSoftmaxMs = medianMs(
        seconds * 0.25, [&] { weighHead(model, settings, forward.heads.front()); }, 5, 1000);
    r.keptBytes = keptBytes(model, forward);
    return r;
}

}  // namespace attnviz::core
