#version 330 core
// One float texture of weights (a texel per cell, or per block of cells for a shrunk map; row =
// query) through a 256-entry colormap table: the same table and the same rounding as
// core/colormap.cpp, so screen and export agree. Both textures are sampled NEAREST; the
// table's clamp-to-edge does the clamping of values outside lo..hi. Masked cells hold -3e38
// (far below any value shown) and are drawn as diagonal hatching.
//
// Kept this short on purpose: with a software rasterizer every instruction here runs for each
// of the half-million pixels of a large map.
uniform sampler2D u_weights;  // R32F, width = keys, height = queries
uniform sampler2D u_lut;      // 256 x 1 RGBA8
uniform vec2 u_map;           // table coordinate = w * u_map.x + u_map.y (lo..hi onto texel centres)
uniform vec3 u_maskInk;
uniform vec3 u_maskPaper;
uniform float u_hatch;        // stripe period in pixels
in vec2 v_uv;
out vec4 frag;

void main() {
    float w = texture(u_weights, v_uv).r;
    if (w < -1.0e38) {
        bool ink = fract((gl_FragCoord.x + gl_FragCoord.y) / u_hatch) < 0.5;
        frag = vec4(ink ? u_maskInk : u_maskPaper, 1.0);
        return;
    }
    frag = vec4(texture(u_lut, vec2(w * u_map.x + u_map.y, 0.5)).rgb, 1.0);
}
