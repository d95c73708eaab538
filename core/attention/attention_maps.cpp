#include "core/attention/attention_maps.hpp"

#include <algorithm>
#include <unordered_map>

namespace attnviz::core {

std::vector<int> idsOfLabels(const std::vector<std::string>& labels) {
    std::unordered_map<std::string, int> first;
    std::vector<int> ids;
    ids.reserve(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) ids.push_back(first.try_emplace(labels[i], static_cast<int>(i)).first->second);
    return ids;
}

void poolBlocks(const MatRef& weights, const Settings& settings, int factor, BlockPooling pooling, std::vector<float>& out) {
    if (pooling == BlockPooling::Max || factor <= 1) {
        poolTexels(weights, settings, factor, out);
        return;
    }
    const Eigen::Index tq = weights.rows(), tk = weights.cols();
    const Eigen::Index rows = pooledSize(tq, factor), cols = pooledSize(tk, factor);
    out.assign(static_cast<std::size_t>(rows * cols), 0.0f);
    std::vector<double> sum(static_cast<std::size_t>(cols));
    std::vector<int> readable(static_cast<std::size_t>(cols));
    for (Eigen::Index r = 0; r < rows; ++r) {
        std::fill(sum.begin(), sum.end(), 0.0);
        std::fill(readable.begin(), readable.end(), 0);
        for (Eigen::Index i = r * factor; i < std::min(tq, (r + 1) * factor); ++i)
            for (Eigen::Index j = 0; j < tk; ++j) {
                if (isBlocked(settings, i, j)) continue;
                const auto c = static_cast<std::size_t>(j / factor);
                sum[c] += weights(i, j);
                ++readable[c];
            }
        float* row = out.data() + r * cols;
        for (Eigen::Index c = 0; c < cols; ++c) {
            const auto k = static_cast<std::size_t>(c);
            row[c] = readable[k] > 0 ? static_cast<float>(sum[k] / readable[k]) : kMaskedTexel;
        }
    }
}

}  // namespace attnviz::core
