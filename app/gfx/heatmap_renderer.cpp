#include "app/gfx/heatmap_renderer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::gfx {

MatrixSource texelsOf(const core::MatRef& values) {
    MatrixSource src;
    src.rows = static_cast<int>(values.rows());
    src.cols = static_cast<int>(values.cols());
    src.texels.resize(static_cast<std::size_t>(values.size()));
    Eigen::Map<core::Mat>(src.texels.data(), values.rows(), values.cols()) = values;
    return src;
}

namespace {

// The shape of a [tq, tk] matrix pooled by factor: texels a side, and the fraction of the
// texture its cells cover.
TexelsView pooledLayout(Eigen::Index tq, Eigen::Index tk, int factor) {
    TexelsView v;
    v.rows = static_cast<int>(core::pooledSize(tq, factor));
    v.cols = static_cast<int>(core::pooledSize(tk, factor));
    v.uScale = v.cols ? static_cast<float>(tk) / static_cast<float>(v.cols * factor) : 1.0f;
    v.vScale = v.rows ? static_cast<float>(tq) / static_cast<float>(v.rows * factor) : 1.0f;
    return v;
}

MatrixSource sourceWithLayout(const TexelsView& layout) {
    MatrixSource src;
    src.rows = layout.rows;
    src.cols = layout.cols;
    src.uScale = layout.uScale;
    src.vScale = layout.vScale;
    return src;
}

}  // namespace

MatrixSource texelsOf(const core::MatRef& weights, const core::Settings& settings, int factor) {
    factor = std::max(1, factor);
    MatrixSource src = sourceWithLayout(pooledLayout(weights.rows(), weights.cols(), factor));
    core::poolTexels(weights, settings, factor, src.texels);
    return src;
}

MatrixSource meanTexelsOf(const core::Forward& forward, const core::Settings& settings, int factor, const core::MeanOptions& options) {
    factor = std::max(1, factor);
    const Eigen::Index tq = forward.heads.empty() ? 0 : forward.heads.front().weights.rows();
    const Eigen::Index tk = forward.heads.empty() ? 0 : forward.heads.front().weights.cols();
    MatrixSource src = sourceWithLayout(pooledLayout(tq, tk, factor));
    core::poolMeanTexels(forward, settings, factor, src.texels, options);
    return src;
}

TexelsView pooledView(const std::vector<float>& texels, Eigen::Index tq, Eigen::Index tk, int factor) {
    TexelsView v = pooledLayout(tq, tk, std::max(1, factor));
    v.texels = texels.data();
    return v;
}

MatrixSource repooled(const TexelsView& pooled, Eigen::Index tq, Eigen::Index tk, int factor, int more) {
    factor = std::max(1, factor);
    more = std::max(1, more);
    MatrixSource src = sourceWithLayout(pooledLayout(tq, tk, factor * more));
    // Masked texels are the lowest value, so a block stays masked only if all of it is.
    core::poolTexels(Eigen::Map<const core::Mat>(pooled.texels, pooled.rows, pooled.cols), core::Settings{}, more, src.texels);
    return src;
}

int poolFactor(float pixelsPerCell) {
    if (!(pixelsPerCell > 0.0f) || pixelsPerCell >= 1.0f) return 1;
    // A hair of slack so that exactly one cell per pixel (up to rounding) is not pooled.
    return std::max(1, static_cast<int>(std::ceil(1.0f / pixelsPerCell - 1e-3f)));
}

namespace {

// Block means of a large matrix: at most maxSide texels a side.
MatrixSource reduce(const TexelsView& in, int maxSide) {
    const int stepR = std::max(1, (in.rows + maxSide - 1) / maxSide), stepC = std::max(1, (in.cols + maxSide - 1) / maxSide);
    MatrixSource out;
    out.rows = (in.rows + stepR - 1) / stepR;
    out.cols = (in.cols + stepC - 1) / stepC;
    out.uScale = in.uScale * static_cast<float>(in.cols) / static_cast<float>(out.cols * stepC);
    out.vScale = in.vScale * static_cast<float>(in.rows) / static_cast<float>(out.rows * stepR);
    out.texels.assign(static_cast<std::size_t>(out.rows) * out.cols, core::kMaskedTexel);
    for (int r = 0; r < out.rows; ++r)
        for (int c = 0; c < out.cols; ++c) {
            double sum = 0.0;
            int open = 0;
            for (int i = r * stepR; i < std::min(in.rows, (r + 1) * stepR); ++i)
                for (int j = c * stepC; j < std::min(in.cols, (c + 1) * stepC); ++j) {
                    const float v = in.texels[static_cast<std::size_t>(i) * in.cols + j];
                    if (core::isMaskedTexel(v)) continue;
                    sum += v;
                    ++open;
                }
            if (open) out.texels[static_cast<std::size_t>(r) * out.cols + c] = static_cast<float>(sum / open);
        }
    return out;
}

}  // namespace

void HeatmapTexture::upload(const TexelsView& source, const Colouring& colouring, int maxSide) {
    const bool shrink = maxSide > 0 && (source.rows > maxSide || source.cols > maxSide);
    const MatrixSource reduced = shrink ? reduce(source, maxSide) : MatrixSource{};
    const TexelsView m = shrink ? reduced.view() : source;
    const bool sameSize = m_rows == m.rows && m_cols == m.cols;
    m_rows = m.rows;
    m_cols = m.cols;
    m_uScale = m.uScale;
    m_vScale = m.vScale;
    const std::size_t count = static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols);
    m_max = count == 0 ? 0.0f : Eigen::Map<const Eigen::ArrayXf>(m.texels, static_cast<Eigen::Index>(count)).maxCoeff();
    m_colouring = colouring;
    // Auto's choice reads the texels once here, on upload (the cache uploads once per version):
    // a long map's quantile is never taken per frame
    m_choice = core::chooseScale(colouring.scale, m.texels, count, colouring.keys, colouring.clipQuantile);
    m_scale = m_choice.resolved;
    if (!glReady()) return;
    m_rgba.resize(count);
    if (m_scale == core::ColourScale::Fixed) {
        core::colormapTexels(colouring.colormap, m.texels, count, colouring.lo, colouring.hi, m_rgba.data());
    } else {
        m_positions.assign(m.texels, m.texels + count);
        core::toScalePositions(m_scale, m_positions.data(), m.rows, m.cols, m_choice.top, colouring.logFloor);
        core::colormapTexels(colouring.colormap, m_positions.data(), count, 0.0f, 1.0f, m_rgba.data());
    }
    const bool fresh = !m_texture;
    if (fresh) m_texture = makeTexture();
    glBindTexture(GL_TEXTURE_2D, m_texture.id());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    if (sameSize && !fresh) {  // same storage: only the texels change
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, m_cols, m_rows, GL_RGBA, GL_UNSIGNED_BYTE, m_rgba.data());
        return;
    }
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, m_cols, m_rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, m_rgba.data());
}

float HeatmapTexture::position(float value, float rowMax) const {
    if (m_scale == core::ColourScale::Fixed) return (value - m_colouring.lo) / std::max(m_colouring.hi - m_colouring.lo, 1e-30f);
    if (m_scale == core::ColourScale::Rows) return value / std::max(rowMax, 1e-30f);
    core::toScalePositions(m_scale, &value, 1, 1, m_choice.top, m_colouring.logFloor);
    return value;
}

HeatmapRenderer::HeatmapRenderer() {
    if (!glReady()) return;
    m_program = makeProgram(shaderSource("heatmap", "vert"), shaderSource("heatmap", "frag"));
    m_vao = makeVertexArray();
    const GLuint p = m_program.id();
    m_uRect = glGetUniformLocation(p, "u_rect");
    m_uUv = glGetUniformLocation(p, "u_uv");
    m_uColours = glGetUniformLocation(p, "u_colours");
    m_uInk = glGetUniformLocation(p, "u_maskInk");
    m_uHatch = glGetUniformLocation(p, "u_hatch");
}

void HeatmapRenderer::draw(ImDrawList* list, const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 uv0, ImVec2 uv1, bool hatch) {
    if (texture.empty()) return;
    if (!m_program) {  // no GL (panel tests): a flat stand-in keeps the layout
        list->AddRectFilled(min, max, IM_COL32(90, 90, 100, 255));
        return;
    }
    m_calls.push_back(Call{this, texture.id(), min, max, texture.toTexture(uv0), texture.toTexture(uv1), hatch});
    list->AddCallback(&HeatmapRenderer::callback, &m_calls.back());
    list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void HeatmapRenderer::callback(const ImDrawList*, const ImDrawCmd* cmd) {
    const Call& c = *static_cast<const Call*>(cmd->UserCallbackData);
    const ImDrawData* dd = ImGui::GetDrawData();
    const ImVec2 pos = dd->DisplayPos, size = dd->DisplaySize, scale = dd->FramebufferScale;
    // Clip to the command's rectangle (ImGui sets the scissor only for its own draws).
    const float x0 = (cmd->ClipRect.x - pos.x) * scale.x, y0 = (cmd->ClipRect.y - pos.y) * scale.y;
    const float x1 = (cmd->ClipRect.z - pos.x) * scale.x, y1 = (cmd->ClipRect.w - pos.y) * scale.y;
    if (x1 <= x0 || y1 <= y0) return;
    glEnable(GL_SCISSOR_TEST);
    glScissor(static_cast<GLint>(x0), static_cast<GLint>(size.y * scale.y - y1), static_cast<GLsizei>(x1 - x0),
              static_cast<GLsizei>(y1 - y0));
    c.renderer->render(c, pos, size, scale.x);
}

void HeatmapRenderer::render(const Call& c, ImVec2 displayPos, ImVec2 displaySize, float pixelScale) const {
    const auto ndcX = [&](float x) { return (x - displayPos.x) / displaySize.x * 2.0f - 1.0f; };
    const auto ndcY = [&](float y) { return 1.0f - (y - displayPos.y) / displaySize.y * 2.0f; };
    glUseProgram(m_program.id());
    glBindVertexArray(m_vao.id());
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, c.texture);
    glUniform1i(m_uColours, 0);
    glUniform4f(m_uRect, ndcX(c.min.x), ndcY(c.min.y), ndcX(c.max.x), ndcY(c.max.y));
    glUniform4f(m_uUv, c.uv0.x, c.uv0.y, c.uv1.x, c.uv1.y);
    glUniform3f(m_uInk, core::kMaskedInk.r / 255.0f, core::kMaskedInk.g / 255.0f, core::kMaskedInk.b / 255.0f);
    glUniform1f(m_uHatch, c.hatch ? 8.0f * pixelScale : 0.0f);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
}

void HeatmapRenderer::drawNow(const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 displaySize) const {
    render(Call{this, texture.id(), min, max, ImVec2(0, 0), texture.toTexture(ImVec2(1, 1))}, ImVec2(0, 0), displaySize, 1.0f);
}

}  // namespace attnviz::gfx
