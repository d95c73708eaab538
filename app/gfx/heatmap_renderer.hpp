// Heatmaps on the GPU: a matrix as one float texture, drawn through the colormap shader
// (shaders/heatmap.*) inside ImGui's draw list by a draw callback.
#pragma once

#include "app/gfx/gl_objects.hpp"
#include "core/attention.hpp"
#include "core/colormap.hpp"
#include "core/matrix.hpp"

#include <imgui.h>

#include <array>
#include <deque>

namespace attnviz::gfx {

// A matrix ready for a texture: [rows, cols] row-major floats; masked cells hold
// core::kMaskedTexel (see core::toTexels).
struct MatrixSource {
    std::vector<float> texels;
    int rows = 0, cols = 0;
};
MatrixSource texelsOf(const core::MatRef& values);                                 // nothing masked
MatrixSource texelsOf(const core::MatRef& weights, const core::Settings& settings);  // masked cells marked

// One matrix as an R32F texture: a texel per cell, row = query.
class HeatmapTexture {
public:
    // With maxSide > 0 a larger matrix is reduced to at most maxSide texels a side by block
    // means (a block is masked only if all of its cells are), for thumbnails.
    void upload(const MatrixSource& source, int maxSide = 0);
    // A whole matrix as it is (row-major floats go to the GPU without a CPU copy).
    void upload(const core::Mat& matrix);
    int rows() const { return m_rows; }
    int cols() const { return m_cols; }
    GLuint id() const { return m_texture.id(); }
    bool empty() const { return m_rows == 0; }
    float maxValue() const { return m_max; }  // largest unmasked value uploaded

private:
    GlTexture m_texture;
    int m_rows = 0, m_cols = 0;
    float m_max = 0.0f;
};

class HeatmapRenderer {
public:
    HeatmapRenderer();  // uses the current GL 3.3 context when glReady()

    // Call once per frame before panels draw (frees last frame's callback records).
    void beginFrame() { m_calls.clear(); }

    // Draws the part [uv0, uv1] of `texture` (u = key axis, v = query axis) into the screen
    // rectangle [min, max], mapping values lo..hi onto the colormap. causal: cells right of the
    // diagonal are hatched (masked cells can also be marked in the texels themselves).
    void draw(ImDrawList* list, const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 uv0, ImVec2 uv1,
              core::ColormapKind colormap, float lo = 0.0f, float hi = 1.0f, bool causal = false);

    // Draws the whole texture into [min, max] of the bound framebuffer right away (benchmarks).
    void drawNow(const HeatmapTexture& texture, ImVec2 min, ImVec2 max, ImVec2 displaySize, core::ColormapKind colormap,
                 bool causal) const;

private:
    struct Call {
        const HeatmapRenderer* renderer;
        GLuint texture;
        GLuint lut;
        ImVec2 min, max, uv0, uv1;
        float lo, hi;
        bool causal;
    };
    static void callback(const ImDrawList* list, const ImDrawCmd* cmd);
    void render(const Call& call, ImVec2 displayPos, ImVec2 displaySize, float pixelScale) const;

    GlProgram m_program;
    GlVertexArray m_vao;
    std::array<GlTexture, core::kColormapCount> m_luts;
    GLint m_uRect = -1, m_uUv = -1, m_uWeights = -1, m_uLut = -1, m_uLoHi = -1, m_uInk = -1, m_uPaper = -1,
          m_uHatch = -1, m_uCausal = -1;
    std::deque<Call> m_calls;  // stable addresses for the draw callbacks of this frame
};

}  // namespace attnviz::gfx
