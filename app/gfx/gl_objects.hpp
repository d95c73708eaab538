// Move-only owners of OpenGL objects: created in the constructor, deleted in the destructor.
#pragma once

#include <glad/gl.h>

#include <string>
#include <utility>

namespace attnviz::gfx {

template <void (*Delete)(GLuint)>
class GlHandle {
public:
    GlHandle() = default;
    explicit GlHandle(GLuint id) : m_id(id) {}
    GlHandle(const GlHandle&) = delete;
    GlHandle& operator=(const GlHandle&) = delete;
    GlHandle(GlHandle&& other) noexcept : m_id(std::exchange(other.m_id, 0)) {}
    GlHandle& operator=(GlHandle&& other) noexcept {
        if (this != &other) {
            reset();
            m_id = std::exchange(other.m_id, 0);
        }
        return *this;
    }
    ~GlHandle() { reset(); }
    void reset() {
        if (m_id) Delete(m_id);
        m_id = 0;
    }
    GLuint id() const { return m_id; }
    explicit operator bool() const { return m_id != 0; }

private:
    GLuint m_id = 0;
};

// False until the app has a GL context: panels can then be drawn (for tests) without a window,
// and textures keep their sizes without touching GL.
bool glReady();
void setGlReady(bool ready);

void deleteTexture(GLuint id);
void deleteProgram(GLuint id);
void deleteVertexArray(GLuint id);
void deleteFramebuffer(GLuint id);

using GlTexture = GlHandle<deleteTexture>;
using GlProgram = GlHandle<deleteProgram>;
using GlVertexArray = GlHandle<deleteVertexArray>;
using GlFramebuffer = GlHandle<deleteFramebuffer>;

GlTexture makeTexture();
GlVertexArray makeVertexArray();
GlFramebuffer makeFramebuffer();
// Compiles and links; throws std::runtime_error with the GL info log on failure.
GlProgram makeProgram(const std::string& vertexSource, const std::string& fragmentSource);

// Shader text compiled into the binary from shaders/ (by file stem: "heatmap").
const std::string& shaderSource(const std::string& name, const char* extension);

}  // namespace attnviz::gfx
