#include "app/platform/window.hpp"

#include <glad/gl.h>
#include <GLFW/glfw3.h>

namespace attnviz::platform {

void Window::Destroy::operator()(GLFWwindow* window) const { glfwDestroyWindow(window); }

Window::Window(const GlfwLibrary&, const WindowOptions& options) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    if (!options.visible) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    m_window.reset(glfwCreateWindow(options.size.width, options.size.height, options.title.c_str(), nullptr, nullptr));
    if (!m_window) throw NoWindow("cannot open an OpenGL 3.3 window (" + GlfwLibrary::lastError() + ")");
    glfwMakeContextCurrent(handle());
    if (!gladLoadGL(glfwGetProcAddress)) throw NoWindow("OpenGL 3.3 is not available");  // m_window destroys it
    glfwSwapInterval(options.swapInterval);
}

bool Window::shouldClose() const { return glfwWindowShouldClose(handle()); }

Size Window::size() const {
    Size s;
    glfwGetWindowSize(handle(), &s.width, &s.height);
    return s;
}

Size Window::framebufferSize() const {
    Size s;
    glfwGetFramebufferSize(handle(), &s.width, &s.height);
    return s;
}

float Window::contentScale() const {
    float x = 1.0f, y = 1.0f;
    glfwGetWindowContentScale(handle(), &x, &y);
    return x;
}

void Window::swapBuffers() { glfwSwapBuffers(handle()); }

void Window::setTitle(const std::string& title) { glfwSetWindowTitle(handle(), title.c_str()); }

void Window::toggleFullscreen() {
    if (m_fullscreen) {
        glfwSetWindowMonitor(handle(), nullptr, m_windowedX, m_windowedY, m_windowed.width, m_windowed.height, 0);
        m_fullscreen = false;
        return;
    }
    glfwGetWindowPos(handle(), &m_windowedX, &m_windowedY);
    m_windowed = size();
    GLFWmonitor* monitor = glfwGetPrimaryMonitor();
    const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
    if (mode) glfwSetWindowMonitor(handle(), monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
    m_fullscreen = mode != nullptr;
}

Size Window::windowedSize() const { return m_fullscreen ? m_windowed : size(); }

}  // namespace attnviz::platform
