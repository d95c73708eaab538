#include "app/platform/window.hpp"

#include "app/keys.hpp"

#include <glad/gl.h>
#include <GLFW/glfw3.h>

namespace attnviz::platform {

// The keys the app names are this window library's codes (ImGui is handed them as they are).
namespace keys = app::keys;
static_assert(keys::kSpace == GLFW_KEY_SPACE && keys::kComma == GLFW_KEY_COMMA && keys::kMinus == GLFW_KEY_MINUS &&
              keys::kPeriod == GLFW_KEY_PERIOD && keys::kZero == GLFW_KEY_0 && keys::kEqual == GLFW_KEY_EQUAL);
static_assert(keys::kO == GLFW_KEY_O && keys::kS == GLFW_KEY_S && keys::kLeftBracket == GLFW_KEY_LEFT_BRACKET &&
              keys::kRightBracket == GLFW_KEY_RIGHT_BRACKET);
static_assert(keys::kEscape == GLFW_KEY_ESCAPE && keys::kRight == GLFW_KEY_RIGHT && keys::kLeft == GLFW_KEY_LEFT &&
              keys::kDown == GLFW_KEY_DOWN && keys::kUp == GLFW_KEY_UP && keys::kPageUp == GLFW_KEY_PAGE_UP &&
              keys::kPageDown == GLFW_KEY_PAGE_DOWN);
static_assert(keys::kF5 == GLFW_KEY_F5 && keys::kF11 == GLFW_KEY_F11 && keys::kKeypadSubtract == GLFW_KEY_KP_SUBTRACT &&
              keys::kKeypadAdd == GLFW_KEY_KP_ADD);

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
