// GPU copies of matrices, re-uploaded only when the data they come from or their colours changed.
#pragma once

#include "app/gfx/heatmap_renderer.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace attnviz::gfx {

// What a cached texture was made from: it is re-made when any of it changes (or its colours do).
struct TextureStamp {
    std::uint64_t data = 0;        // the version of the numbers (AppState's dataVersion, a head's version)
    int head = 0;                  // the head shown (-1: the mean), where one key shows any head
    int pooling = 1;               // cells a texel covers along each side
    long long rows = 0, cols = 0;  // the matrix's shape, where the shape alone decides the numbers
    bool operator==(const TextureStamp&) const = default;
};

class TextureCache {
public:
    // The texture for `key`, coloured by `colouring`; `make` runs (and the texture is uploaded)
    // only when `stamp` or `colouring` differs from the cached one. maxSide > 0 reduces large
    // matrices (thumbnails).
    const HeatmapTexture& get(const std::string& key, const TextureStamp& stamp, const Colouring& colouring,
                              const std::function<MatrixSource()>& make, int maxSide = 0);
    // The same for texels that already exist: uploaded from where they are when either differs.
    const HeatmapTexture& get(const std::string& key, const TextureStamp& stamp, const Colouring& colouring, const TexelsView& ready);
    long long uploads() const { return m_uploads; }

private:
    struct Entry {
        TextureStamp stamp;
        HeatmapTexture texture;
    };
    std::map<std::string, Entry> m_entries;
    long long m_uploads = 0;
};

}  // namespace attnviz::gfx
