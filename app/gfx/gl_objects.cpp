#include "app/gfx/gl_objects.hpp"

#include "app/gfx/shader_sources.hpp"

#include <stdexcept>
#include <unordered_map>

namespace attnviz::gfx {

namespace {
bool g_glReady = false;
}

bool glReady() { return g_glReady; }
void setGlReady(bool ready) { g_glReady = ready; }

void deleteTexture(GLuint id) { glDeleteTextures(1, &id); }
void deleteProgram(GLuint id) { glDeleteProgram(id); }
void deleteVertexArray(GLuint id) { glDeleteVertexArrays(1, &id); }
void deleteFramebuffer(GLuint id) { glDeleteFramebuffers(1, &id); }

GlTexture makeTexture() {
    GLuint id = 0;
    glGenTextures(1, &id);
    return GlTexture(id);
}

GlVertexArray makeVertexArray() {
    GLuint id = 0;
    glGenVertexArrays(1, &id);
    return GlVertexArray(id);
}

GlFramebuffer makeFramebuffer() {
    GLuint id = 0;
    glGenFramebuffers(1, &id);
    return GlFramebuffer(id);
}

namespace {

GLuint compile(GLenum type, const std::string& source) {
    const GLuint shader = glCreateShader(type);
    const char* text = source.c_str();
    glShaderSource(shader, 1, &text, nullptr);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[2048];
        glGetShaderInfoLog(shader, sizeof log, nullptr, log);
        glDeleteShader(shader);
        throw std::runtime_error(std::string("shader compile failed: ") + log);
    }
    return shader;
}

}  // namespace

GlProgram makeProgram(const std::string& vertexSource, const std::string& fragmentSource) {
    const GLuint vs = compile(GL_VERTEX_SHADER, vertexSource);
    const GLuint fs = compile(GL_FRAGMENT_SHADER, fragmentSource);
    GlProgram program(glCreateProgram());
    glAttachShader(program.id(), vs);
    glAttachShader(program.id(), fs);
    glLinkProgram(program.id());
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(program.id(), GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[2048];
        glGetProgramInfoLog(program.id(), sizeof log, nullptr, log);
        throw std::runtime_error(std::string("shader link failed: ") + log);
    }
    return program;
}

const std::string& shaderSource(const std::string& name, const char* extension) {
    static const std::unordered_map<std::string, std::string> sources = [] {
        std::unordered_map<std::string, std::string> map;
        for (const ShaderFile& f : shaderFiles()) map[f.name] = f.text;
        return map;
    }();
    const auto it = sources.find(name + "." + extension);
    if (it == sources.end()) throw std::runtime_error("no shader " + name + "." + extension);
    return it->second;
}

}  // namespace attnviz::gfx
