// Where a pass's kept matrices live (decoder.hpp's Run): one mapping per store, laid out layer
// after layer (from its first layer: an edited pass's store holds only the layers it computed) as
// input [C, d], normed [C, d] (unless Lean), qkv [C, w] (w = (h + 2g)·d_h), scoreMax [h, C], logSum [h, C], then, when
// the store keeps them (PassMaps::Kept), every query head's weights [C, C]; and after the last
// layer final [C, d]; C = the capacity in positions. A store's pages may come from
// one given back (whatever they held): a pass writes every element its views show.
// Private to the decoder's sources.
#pragma once

#include "core/models/decoder/decoder.hpp"

#include <mutex>
#include <set>

namespace attnviz::core::decoder {

using KeptBlock = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;

struct Store {
    Store(const Config& config, Eigen::Index capacity, int firstLayer = 0, PassMaps maps = PassMaps::Kept);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    float* input(int layer) const { return m_data + static_cast<std::ptrdiff_t>(layer - first) * layerFloats(); }  // unless Lean
    float* normed(int layer) const { return input(layer) + capacity * d; }                                         // unless Lean
    float* qkv(int layer) const { return input(layer) + (activations() ? 2 * capacity * d : 0); }
    float* scoreMax(int layer, int head) const { return qkv(layer) + capacity * qkvWidth + head * capacity; }
    float* logSum(int layer, int head) const { return scoreMax(layer, 0) + (heads + head) * capacity; }
    float* weights(int layer, int head) const {  // only when kept
        return scoreMax(layer, 0) + 2 * heads * capacity + head * capacity * capacity;
    }
    float* final() const { return m_data + static_cast<std::ptrdiff_t>(layers - first) * layerFloats(); }
    Eigen::Index layerFloats() const {
        return capacity * ((activations() ? 2 * d : 0) + qkvWidth + 2 * heads) + (maps == PassMaps::Kept ? heads * capacity * capacity : 0);
    }
    bool activations() const { return maps != PassMaps::Lean; }

    const Eigen::Index capacity, d, qkvWidth, heads;
    const PassMaps maps;
    const int layers;  // the model's
    const int first;   // the first layer held: layers [first, layers) and final
    // The token counts of the live passes reading this store; a pass may write positions p … T
    // only when none of them reads past p.
    std::mutex mutex;
    std::multiset<Eigen::Index> live;

private:
    float* m_data = nullptr;
    std::size_t m_bytes = 0;
};

// An edited pass's extent views the layers below firstLayer in `below` (the pass it reused).
struct Run::Extent {
    Extent(std::shared_ptr<Store> s, Eigen::Index t, std::shared_ptr<const Extent> lower = nullptr, int from = 0);
    ~Extent();
    Extent(const Extent&) = delete;
    Extent& operator=(const Extent&) = delete;
    std::shared_ptr<Store> store;
    Eigen::Index tokens;
    std::shared_ptr<const Extent> below;  // null when firstLayer is 0
    int firstLayer = 0;
    // The extent whose store holds `layer`.
    const Store& storeOf(int layer) const {
        const Extent* e = this;
        while (layer < e->firstLayer) e = e->below.get();
        return *e->store;
    }
};

struct RunAccess {
    static void attach(Run& run, std::shared_ptr<const Run::Extent> extent) { run.m_extent = std::move(extent); }
    static const Run::Extent* extent(const Run& run) { return run.m_extent.get(); }
    static std::shared_ptr<const Run::Extent> shared(const Run& run) { return run.m_extent; }
};

// [rows, cols] at `data` with rows `stride` floats apart, writable.
inline KeptBlock keptBlock(float* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride) {
    return {data, rows, cols, Eigen::OuterStride<>(stride)};
}

// The pass's building blocks (decoder_forward.cpp), for what reads the kept stream again.
// out = Norm(x; gain, bias) row by row, sums in double (no gain: a copy).
void normRows(Norm kind, const MatRef& x, const Weight& gain, const Weight& bias, float eps, Eigen::Ref<Mat> out);
// out [rows, n] = a [rows, k] · W [k, n] (+ bias), through W's packed panels.
void linear(const MatRef& a, const Weight& w, const Weight& bias, Eigen::Ref<Mat> out);
// The activation of every element, in place.
void activate(Activation act, Eigen::Ref<Mat> m);
// A block's MLP of rows `a` (its norm's output): out [rows, d]; up, gate: [rows, inner] scratch.
void mlp(const Config& cfg, const Layer& layer, const MatRef& a, Eigen::Ref<Mat> up, Eigen::Ref<Mat> gate, const Eigen::Ref<Mat>& out);

}  // namespace attnviz::core::decoder
