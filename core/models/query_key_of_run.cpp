#include "core/models/query_key_of_run.hpp"

#include "core/base/error.hpp"

#include <string>

namespace attnviz::core {

QueryKeyMap runQueryKeyMap(const decoder::Run& run, const decoder::Config& config, int layer, int head) {
    if (layer < 0 || layer >= run.layerCount())
        throw InputError("query-key map",
                         "no layer " + std::to_string(layer + 1) + " (the pass has " + std::to_string(run.layerCount()) + ")");
    if (head < 0 || head >= config.nHead)
        throw InputError("query-key map", "no head " + std::to_string(head + 1) + " (the layer has " + std::to_string(config.nHead) + ")");
    const decoder::KeptView qkv = run.qkv(layer);  // [T, (h + 2g)·d_h]: q of every head, then k, then v of every kv head
    const Eigen::Index dh = config.headDim;
    return queryKeyMap(qkv.middleCols(head * dh, dh), qkv.middleCols(config.qWidth() + config.kvHeadOf(head) * dh, dh));
}

}  // namespace attnviz::core
