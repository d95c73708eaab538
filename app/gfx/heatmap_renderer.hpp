// Heatmaps on the GPU: a matrix as one texture of colormap colours (coloured on upload by
// core::colormapTexels, the exporter's table and rounding), drawn by the shader in
// shaders/heatmap.* inside ImGui's draw list by a draw callback.
#pragma once

#include "app/gfx/gl_objects.hpp"
#include "core/attention/attention.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/matrix.hpp"

#include <imgui.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

namespace attnviz::gfx {

// A matrix ready for a texture: [rows, cols] row-major floats; masked cells hold
// core::kMaskedTexel (see core::toTexels). A texel may stand for a block of cells (a map drawn
// smaller than one pixel per cell); uScale, vScale are then the fraction of the texture's width
// and height that the matrix's cells cover (below 1 when the last block is partial).
// MatrixSource owns its texels; TexelsView is the same layout over texels kept elsewhere
// (uploaded from where they are, not copied).
struct TexelsView {
    const float* texels = nullptr;
    int rows = 0, cols = 0;
    float uScale = 1.0f, vScale = 1.0f;
};
struct MatrixSource {
    std::vector<float> texels;
    int rows = 0, cols = 0;
    float uScale = 1.0f, vScale = 1.0f;
    TexelsView view() const { return {texels.data(), rows, cols, uScale, vScale}; }
};
MatrixSource texelsOf(const core::MatRef& values);  // nothing masked
// Weights with masked cells marked; factor > 1 keeps each factor x factor block's largest
// readable weight (core::poolTexels).
MatrixSource texelsOf(const core::MatRef& weights, const core::Settings& settings, int factor = 1);
// The same for the mean over heads (core::poolMeanTexels: the mean is never held whole).
MatrixSource meanTexelsOf(const core::Forward& forward, const core::Settings& settings, int factor = 1,
                          const core::MeanOptions& options = {});
// Texels that core::poolTexels made from a [tq, tk] matrix with `factor`, viewed in place.
TexelsView pooledView(const std::vector<float>& texels, Eigen::Index tq, Eigen::Index tk, int factor);
// Those texels pooled again by `more`: exactly the texels of the matrix pooled by
// factor · more (a block's maximum is the maximum of its sub-blocks' maxima).
MatrixSource repooled(const TexelsView& pooled, Eigen::Index tq, Eigen::Index tk, int factor, int more);
// The pooling factor that puts at most one texel on each pixel: ceil(cells per pixel).
int poolFactor(float pixelsPerCell);

// How a texture's values become colours: lo … hi onto the colormap (signed maps, losses); or,
// for attention weights, by a colour scale (core::ColourScale: fixed 0 … 1, stretched to the
// largest weight uploaded, per row, or log10 from `logFloor`), which replaces lo … hi.
struct Colouring {
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    float lo = 0.0f, hi = 1.0f;
    core::ColourScale scale = core::ColourScale::Fixed;
    float logFloor = 0.01f;
    long long keys = 0;         // the map's keys, for Auto's floor (core::chooseScale); 0: not one map's weights
    float clipQuantile = 0.0f;  // Auto's quantile read from the map's reference texels; 0: from those uploaded
    bool operator==(const Colouring&) const = default;
};

// One matrix as an RGBA8 texture of its colours: a texel per cell (or per block of cells), row =
// query; masked cells have alpha 0 and are hatched by the shader.
class HeatmapTexture {
public:
    // With maxSide > 0 a larger matrix is reduced to at most maxSide texels a side by block
    // means (a block is masked only if all of its cells are), for thumbnails of signed values.
    void upload(const TexelsView& source, const Colouring& colouring, int maxSide = 0);
    void upload(const MatrixSource& source, const Colouring& colouring, int maxSide = 0) { upload(source.view(), colouring, maxSide); }
    int rows() const { return m_rows; }
    int cols() const { return m_cols; }
    GLuint id() const { return m_texture.id(); }
    bool empty() const { return m_rows == 0; }
    float maxValue() const { return m_max; }  // largest unmasked value uploaded
    const Colouring& colouring() const { return m_colouring; }
    // The colour scale in effect (Auto made definite by the texels: core::chooseScale).
    core::ColourScale scale() const { return m_scale; }
    // The weight at the top of the colour bar under Stretch (the largest, or Auto's clipping
    // quantile), and the share of texels above it.
    float top() const { return m_choice.top; }
    const core::ScaleChoice& scaleChoice() const { return m_choice; }
    // Where a value of row maximum `rowMax` falls on the colour bar, 0 … 1: the colour it was given.
    float position(float value, float rowMax) const;
    // Texture coordinates of a point given as a fraction of the matrix's cells.
    ImVec2 toTexture(ImVec2 uv) const { return ImVec2(uv.x * m_uScale, uv.y * m_vScale); }

private:
    GlTexture m_texture;
    int m_rows = 0, m_cols = 0;
    float m_uScale = 1.0f, m_vScale = 1.0f;
    float m_max = 0.0f;
    Colouring m_colouring;
    core::ColourScale m_scale = core::ColourScale::Fixed;
    core::ScaleChoice m_choice;
    std::vector<float> m_positions;     // upload scratch: the values as colour-bar positions
    std::vector<std::uint32_t> m_rgba;  // upload scratch, kept between uploads
};

class HeatmapRenderer {
public:
    HeatmapRenderer();  // uses the current GL 3.3 context when glReady()

    // Call once per frame before panels draw (frees last frame's callback records).
    void beginFrame() { m_calls.clear(); }

    // Draws the part [uv0, uv1] of the matrix in `texture` (fractions of its cells: u = key
    // axis, v = query axis) into the screen rectangle [min, max]; masked texels are hatched, or
    // with `hatch` false drawn flat in the hatch's paper colour (thumbnails too small for stripes).
    void draw(ImDrawList* list, const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 uv0, ImVec2 uv1, bool hatch = true);

    // Draws the whole matrix into [min, max] of the bound framebuffer right away (benchmarks).
    void drawNow(const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 displaySize) const;

private:
    struct Call {
        const HeatmapRenderer* renderer;
        GLuint texture;
        ImVec2 min, max, uv0, uv1;  // uv in texture coordinates
        bool hatch = true;
    };
    static void callback(const ImDrawList* list, const ImDrawCmd* cmd);
    void render(const Call& call, ImVec2 displayPos, ImVec2 displaySize, float pixelScale) const;

    GlProgram m_program;
    GlVertexArray m_vao;
    GLint m_uRect = -1, m_uUv = -1, m_uColours = -1, m_uInk = -1, m_uHatch = -1;
    std::deque<Call> m_calls;  // stable addresses for the draw callbacks of this frame
};

}  // namespace attnviz::gfx
