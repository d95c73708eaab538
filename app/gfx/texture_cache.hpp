// GPU copies of matrices, re-uploaded only when the data they come from or their colours changed.
#pragma once

#include "app/gfx/heatmap_renderer.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace attnviz::gfx {

class TextureCache {
public:
    // The texture for `key`, coloured by `colouring`; `make` runs (and the texture is uploaded)
    // only when `version` or `colouring` differs from the cached one. maxSide > 0 reduces large
    // matrices (thumbnails).
    const HeatmapTexture& get(const std::string& key, std::uint64_t version, const Colouring& colouring,
                              const std::function<MatrixSource()>& make, int maxSide = 0);
    // The same for texels that already exist: uploaded from where they are when either differs.
    const HeatmapTexture& get(const std::string& key, std::uint64_t version, const Colouring& colouring, const TexelsView& ready);
    long long uploads() const { return m_uploads; }

private:
    struct Entry {
        std::uint64_t version = 0;
        HeatmapTexture texture;
    };
    std::map<std::string, Entry> m_entries;
    long long m_uploads = 0;
};

}  // namespace attnviz::gfx
