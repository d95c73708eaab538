// Shared by the figure tests: PNG bytes decoded to pixels, colours as SVG writes them, and the
// SVG groups and counts the checks read.
#pragma once

#include "core/attention/colormap.hpp"

#include <stb_image.h>

#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnviz::figurecheck {

struct Image {
    int width = 0, height = 0;
    std::vector<unsigned char> rgba;
    core::Rgb at(int x, int y) const {
        const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 4;
        return {rgba[i], rgba[i + 1], rgba[i + 2]};
    }
};

inline Image decodePng(const std::string& png) {
    Image img;
    int channels = 0;
    unsigned char* data = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png.data()), static_cast<int>(png.size()),
                                                &img.width, &img.height, &channels, 4);
    if (!data) throw std::runtime_error("not a PNG");
    img.rgba.assign(data, data + static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4);
    stbi_image_free(data);
    return img;
}

inline std::string hexOf(core::Rgb c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
    return buffer;
}

// The text of <g id="id"> up to its first </g>; empty when there is no such group.
inline std::string svgGroup(const std::string& svg, const std::string& id) {
    const std::size_t begin = svg.find("<g id=\"" + id + "\"");
    if (begin == std::string::npos) return {};
    return svg.substr(begin, svg.find("</g>", begin) - begin);
}

inline std::size_t countOf(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

}  // namespace attnviz::figurecheck
