// Rendering a frame into an offscreen framebuffer and reading it back as an image.
#pragma once

#include "app/gfx/gl_objects.hpp"

#include <imgui.h>

#include <optional>
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

// RGBA8 pixels, top row first: [height, width, 4].
struct Image {
    std::vector<unsigned char> rgba;
    int width = 0, height = 0;
};

// A rectangle of the frame in ImGui points, top-left origin.
struct FrameRect {
    ImVec2 min, max;
};

// Draws ImGui's finished frame (drawData, after ImGui::Render(), made with io.DisplayFramebufferScale
// = pixelScale) into an offscreen target of DisplaySize x pixelScale pixels cleared to `background`,
// and reads back `rect` (points) or, without one, the whole frame. Throws std::runtime_error when
// the target cannot be made. The window's framebuffer is bound again on return, thrown or not.
Image captureFrame(ImDrawData* drawData, float pixelScale, ImVec4 background, const std::optional<FrameRect>& rect);

}  // namespace attnviz::gfx
