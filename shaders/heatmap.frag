#version 330 core
// One texture of the cells' colours (a texel per cell, or per block of cells for a shrunk map;
// row = query), coloured on upload through the colormap table with the exporter's rounding
// (core::colormapTexels), so screen and export agree. Sampled NEAREST. Masked cells have alpha 0
// and the hatch's paper colour; every other stripe of them is drawn in ink (none when u_hatch is
// 0: the paper alone, for thumbnails).
//
// Kept this short on purpose: with a software rasterizer every instruction here runs for each
// of the half-million pixels of a large map, and a colormap lookup here (a second, dependent
// texture fetch per pixel) made a 2048-token map's redraw about a quarter slower
// (BM_RedrawOnly in bench/bench_heatmap_gl.cpp).
uniform sampler2D u_colours;  // RGBA8, width = keys, height = queries
uniform vec3 u_maskInk;
uniform float u_hatch;        // stripe period in pixels
in vec2 v_uv;
out vec4 frag;

void main() {
    vec4 cell = texture(u_colours, v_uv);
    bool ink = cell.a < 0.5 && u_hatch > 0.0 && fract((gl_FragCoord.x + gl_FragCoord.y) / u_hatch) < 0.5;
    frag = vec4(ink ? u_maskInk : cell.rgb, 1.0);
}
