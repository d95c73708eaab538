// The store of a pass's kept matrices and the Run handle's views of it (decoder_store.hpp).
#include "core/models/decoder/decoder_store.hpp"

#include "core/base/pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <stdexcept>

namespace attnviz::core::decoder {

namespace {

// The pages of the last store given back, kept for the next store of about their size: pass
// after pass (a new sentence, a benchmark) writes into pages already there rather than faulting
// in fresh ones (core/base/pages.hpp). Kept as MADV_FREE: the kernel may take them back when
// memory runs short (they then read as zeros; no pass relies on what they hold).
struct Spare {
    std::mutex mutex;
    void* address = nullptr;
    std::size_t bytes = 0;
};

Spare& spare() {
    static Spare s;
    return s;
}

}  // namespace

const char* passMapsName(PassMaps maps) {
    switch (maps) {
        case PassMaps::Kept: return "kept";
        case PassMaps::OnDemand: return "on demand";
        case PassMaps::Lean: return "on demand, lean";
    }
    return "";
}

std::uint64_t storeBytes(const Config& config, Eigen::Index capacity, int firstLayer, PassMaps maps) {
    // at most 2^10 layers x 2^10 heads x (2^20 positions)^2 floats (the families' config limits): under 2^64 bytes
    const auto c = static_cast<std::uint64_t>(capacity), d = static_cast<std::uint64_t>(config.nEmbd),
               h = static_cast<std::uint64_t>(config.nHead);
    const std::uint64_t activations = maps == PassMaps::Lean ? 0 : 2 * d;
    const std::uint64_t layer =
        c * (activations + static_cast<std::uint64_t>(config.qkvWidth()) + 2 * h) + (maps == PassMaps::Kept ? h * c * c : 0);
    return (static_cast<std::uint64_t>(config.nLayer - firstLayer) * layer + c * d) * sizeof(float);
}

Store::Store(const Config& config, Eigen::Index cap, int firstLayer, PassMaps kept)
    : capacity(cap),
      d(config.nEmbd),
      qkvWidth(config.qkvWidth()),
      heads(config.nHead),
      maps(kept),
      layers(config.nLayer),
      first(firstLayer) {
    m_bytes = static_cast<std::size_t>(storeBytes(config, capacity, first, maps));
    {
        Spare& s = spare();
        const std::lock_guard<std::mutex> lock(s.mutex);
        if (s.address && s.bytes >= m_bytes && s.bytes - m_bytes <= m_bytes / 4) {
            m_data = static_cast<float*>(s.address);
            m_bytes = s.bytes;
            s.address = nullptr;
            return;
        }
        unmapPages(s.address, s.bytes);  // too small or too large for what comes next
        s.address = nullptr;
    }
    m_data = static_cast<float*>(mapPages(m_bytes));
}

Store::~Store() {
    Spare& s = spare();
    const std::lock_guard<std::mutex> lock(s.mutex);
    unmapPages(s.address, s.bytes);
    ::madvise(m_data, m_bytes, MADV_FREE);
    s.address = m_data;
    s.bytes = m_bytes;
}

Run::Extent::Extent(std::shared_ptr<Store> s, Eigen::Index t, std::shared_ptr<const Extent> lower, int from)
    : store(std::move(s)), tokens(t), below(std::move(lower)), firstLayer(from) {}

Run::Extent::~Extent() {
    const std::lock_guard<std::mutex> lock(store->mutex);
    store->live.erase(store->live.find(tokens));
}

int Run::layerCount() const { return m_extent ? m_extent->store->layers : 0; }
int Run::headCount() const { return m_extent ? static_cast<int>(m_extent->store->heads) : 0; }
Eigen::Index Run::capacity() const { return m_extent ? m_extent->store->capacity : 0; }
int Run::computedFrom() const { return m_extent ? m_extent->firstLayer : 0; }

std::vector<int> Run::hiddenTokens() const {
    std::vector<int> hidden;
    for (const Intervention& e : edits)
        if (e.kind == Intervention::Kind::HideToken) hidden.push_back(e.token);
    std::sort(hidden.begin(), hidden.end());
    return hidden;
}

namespace {

const Store& activationsOf(const Run::Extent& extent, int layer) {
    const Store& s = extent.storeOf(layer);
    if (!s.activations()) throw std::logic_error("this pass keeps no activations (PassMaps::Lean)");
    return s;
}

}  // namespace

KeptView Run::input(int layer) const {
    const Store& s = activationsOf(*m_extent, layer);
    return {s.input(layer), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

KeptView Run::normed(int layer) const {
    const Store& s = activationsOf(*m_extent, layer);
    return {s.normed(layer), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

KeptView Run::qkv(int layer) const {
    const Store& s = m_extent->storeOf(layer);
    return {s.qkv(layer), tokens(), s.qkvWidth, Eigen::OuterStride<>(s.qkvWidth)};
}

KeptView Run::scoreMax(int layer) const {
    const Store& s = m_extent->storeOf(layer);
    return {s.scoreMax(layer, 0), s.heads, tokens(), Eigen::OuterStride<>(s.capacity)};
}

KeptView Run::logSum(int layer) const {
    const Store& s = m_extent->storeOf(layer);
    return {s.logSum(layer, 0), s.heads, tokens(), Eigen::OuterStride<>(s.capacity)};
}

PassMaps Run::maps() const { return m_extent ? m_extent->store->maps : PassMaps::Kept; }

bool Run::keepsWeights() const { return m_extent && m_extent->store->maps == PassMaps::Kept; }
bool Run::keepsActivations() const { return m_extent && m_extent->store->activations(); }

KeptView Run::weights(int layer, int head) const {
    const Store& s = m_extent->storeOf(layer);
    if (s.maps != PassMaps::Kept) throw std::logic_error("this pass keeps no maps: read them with mapWeightRows");
    return {s.weights(layer, head), tokens(), tokens(), Eigen::OuterStride<>(s.capacity)};
}

KeptView Run::final() const {
    const Store& s = *m_extent->store;
    return {s.final(), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

}  // namespace attnviz::core::decoder
