// The store of a pass's kept matrices and the Run handle's views of it (gpt2_store.hpp).
#include "core/models/gpt2/gpt2_store.hpp"

#include <sys/mman.h>

#include <new>

namespace attnviz::core::gpt2 {

Store::Store(const Config& config, Eigen::Index cap) : capacity(cap), d(config.nEmbd), heads(config.nHead), layers(config.nLayer) {
    const auto floats = static_cast<std::size_t>(layers * layerFloats() + capacity * d);
    m_bytes = floats * sizeof(float);
    void* p = ::mmap(nullptr, m_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // Huge pages where the kernel offers them: a pass over 512 tokens writes 200 MB of fresh
    // pages, and faulting them in 4 KiB at a time costs a tenth of the pass.
    ::madvise(p, m_bytes, MADV_HUGEPAGE);
    m_data = static_cast<float*>(p);
}

Store::~Store() { ::munmap(m_data, m_bytes); }

Run::Extent::Extent(std::shared_ptr<Store> s, Eigen::Index t) : store(std::move(s)), tokens(t) {}

Run::Extent::~Extent() {
    const std::lock_guard<std::mutex> lock(store->mutex);
    store->live.erase(store->live.find(tokens));
}

int Run::layerCount() const { return m_extent ? m_extent->store->layers : 0; }
int Run::headCount() const { return m_extent ? static_cast<int>(m_extent->store->heads) : 0; }
Eigen::Index Run::capacity() const { return m_extent ? m_extent->store->capacity : 0; }

KeptView Run::input(int layer) const {
    const Store& s = *m_extent->store;
    return {s.input(layer), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

KeptView Run::normed(int layer) const {
    const Store& s = *m_extent->store;
    return {s.normed(layer), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

KeptView Run::qkv(int layer) const {
    const Store& s = *m_extent->store;
    return {s.qkv(layer), tokens(), 3 * s.d, Eigen::OuterStride<>(3 * s.d)};
}

KeptView Run::weights(int layer, int head) const {
    const Store& s = *m_extent->store;
    return {s.weights(layer, head), tokens(), tokens(), Eigen::OuterStride<>(s.capacity)};
}

KeptView Run::final() const {
    const Store& s = *m_extent->store;
    return {s.final(), tokens(), s.d, Eigen::OuterStride<>(s.d)};
}

}  // namespace attnviz::core::gpt2
