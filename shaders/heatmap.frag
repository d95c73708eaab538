#version 330 core
// One float texture of weights (a texel per cell, row = query) through a 256-entry colormap
// table: the same table and the same rounding as core/colormap.cpp, so screen and export agree.
// Masked cells hold -3e38 (far below any value shown), or lie right of the diagonal when
// u_causal is set; either way they are drawn as diagonal hatching.
uniform sampler2D u_weights;  // R32F, width = keys, height = queries
uniform sampler2D u_lut;      // 256 x 1 RGBA8
uniform vec2 u_lohi;          // value range mapped onto the table
uniform vec3 u_maskInk;
uniform vec3 u_maskPaper;
uniform float u_hatch;        // stripe period in pixels
uniform int u_causal;         // 1: cells with key > query are masked (the texture holds plain weights)
in vec2 v_uv;
out vec4 frag;

void main() {
    ivec2 size = textureSize(u_weights, 0);
    ivec2 cell = clamp(ivec2(floor(v_uv * vec2(size))), ivec2(0), size - 1);
    float w = texelFetch(u_weights, cell, 0).r;
    if (w < -1.0e38 || (u_causal != 0 && cell.x > cell.y)) {
        bool ink = mod(gl_FragCoord.x + gl_FragCoord.y, u_hatch) < 0.5 * u_hatch;
        frag = vec4(ink ? u_maskInk : u_maskPaper, 1.0);
        return;
    }
    float span = u_lohi.y - u_lohi.x;
    float t = span > 0.0 ? (w - u_lohi.x) / span : 0.0;
    int index = t <= 0.0 ? 0 : (t >= 1.0 ? 255 : int(floor(t * 255.0 + 0.5)));
    frag = vec4(texelFetch(u_lut, ivec2(index, 0), 0).rgb, 1.0);
}
