#include "app/gfx/capture.hpp"

#include <backends/imgui_impl_opengl3.h>

#include <cstring>
#include <stdexcept>

namespace attnviz::gfx {

OffscreenTarget::OffscreenTarget(int width, int height)
    : m_width(width), m_height(height), m_fbo(makeFramebuffer()), m_color(makeTexture()) {
    glBindTexture(GL_TEXTURE_2D, m_color.id());
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glBindFramebuffer(GL_FRAMEBUFFER, m_fbo.id());
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, m_color.id(), 0);
    const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    if (status != GL_FRAMEBUFFER_COMPLETE)
        throw std::runtime_error("cannot render " + std::to_string(width) + "x" + std::to_string(height) +
                                 " offscreen (framebuffer incomplete)");
}

void OffscreenTarget::bind() const {
    glBindFramebuffer(GL_FRAMEBUFFER, m_fbo.id());
    glViewport(0, 0, m_width, m_height);
}

void OffscreenTarget::unbind() { glBindFramebuffer(GL_FRAMEBUFFER, 0); }

std::vector<unsigned char> OffscreenTarget::read(int x, int y, int w, int h) const {
    std::vector<unsigned char> flipped(static_cast<std::size_t>(w) * h * 4), out(flipped.size());
    glBindFramebuffer(GL_FRAMEBUFFER, m_fbo.id());
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(x, m_height - y - h, w, h, GL_RGBA, GL_UNSIGNED_BYTE, flipped.data());
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    const std::size_t row = static_cast<std::size_t>(w) * 4;
    for (int r = 0; r < h; ++r) std::memcpy(out.data() + r * row, flipped.data() + (h - 1 - r) * row, row);  // GL is bottom-up
    return out;
}

Image captureFrame(ImDrawData* drawData, float pixelScale, ImVec4 background, const std::optional<FrameRect>& rect) {
    struct Unbind {
        ~Unbind() { OffscreenTarget::unbind(); }
    } unbind;
    const int fw = static_cast<int>(drawData->DisplaySize.x * pixelScale), fh = static_cast<int>(drawData->DisplaySize.y * pixelScale);
    OffscreenTarget target(fw, fh);
    target.bind();
    glClearColor(background.x, background.y, background.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(drawData);
    int x = 0, y = 0;
    Image image{{}, fw, fh};
    if (rect) {
        x = static_cast<int>(rect->min.x * pixelScale), y = static_cast<int>(rect->min.y * pixelScale);
        image.width = static_cast<int>((rect->max.x - rect->min.x) * pixelScale);
        image.height = static_cast<int>((rect->max.y - rect->min.y) * pixelScale);
    }
    image.rgba = target.read(x, y, image.width, image.height);
    return image;
}

}  // namespace attnviz::gfx
