#include "app/gfx/texture_cache.hpp"

namespace attnviz::gfx {

const HeatmapTexture& TextureCache::get(const std::string& key, const TextureStamp& stamp, const Colouring& colouring,
                                        const std::function<MatrixSource()>& make, int maxSide) {
    Entry& e = m_entries[key];
    if (!(e.stamp == stamp) || e.texture.empty() || !(e.texture.colouring() == colouring)) {
        e.texture.upload(make(), colouring, maxSide);
        e.stamp = stamp;
        ++m_uploads;
    }
    return e.texture;
}

const HeatmapTexture& TextureCache::get(const std::string& key, const TextureStamp& stamp, const Colouring& colouring,
                                        const TexelsView& ready) {
    Entry& e = m_entries[key];
    if (!(e.stamp == stamp) || e.texture.empty() || !(e.texture.colouring() == colouring)) {
        e.texture.upload(ready, colouring);
        e.stamp = stamp;
        ++m_uploads;
    }
    return e.texture;
}

}  // namespace attnviz::gfx
