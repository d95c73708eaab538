// Rendering a frame into an offscreen framebuffer and reading it back as an image.
#pragma once

#include "app/gfx/gl_objects.hpp"

#include <string>
#include <vector>

namespace attnviz::gfx {

// An RGBA8 colour target of a given pixel size; bind it, draw, read it back.
class OffscreenTarget {
public:
    OffscreenTarget(int width, int height);  // throws std::runtime_error if incomplete
    void bind() const;
    static void unbind();
    // Pixels of [x, y, w, h] (top-left origin), top row first, RGBA.
    std::vector<unsigned char> read(int x, int y, int w, int h) const;
    int width() const { return m_width; }
    int height() const { return m_height; }

private:
    int m_width, m_height;
    GlFramebuffer m_fbo;
    GlTexture m_color;
};

}  // namespace attnviz::gfx
