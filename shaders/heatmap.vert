#version 330 core
// A quad covering u_rect (normalised device coordinates: x0, y0, x1, y1), no vertex buffer:
// the corner comes from gl_VertexID (triangle strip of 4).
uniform vec4 u_rect;
uniform vec4 u_uv;  // u0, v0, u1, v1: the part of the matrix shown (v = query axis, 0 = first row)
out vec2 v_uv;

void main() {
    vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
    gl_Position = vec4(mix(u_rect.xy, u_rect.zw, corner), 0.0, 1.0);
    v_uv = mix(u_uv.xy, u_uv.zw, corner);
}
