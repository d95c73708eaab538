// The app's one window with its OpenGL 3.3 core context, current on this thread and with GL's
// functions loaded (glad) for the life of the object; destroyed in the destructor.
#pragma once

#include "app/platform/glfw_library.hpp"

#include <memory>
#include <string>

struct GLFWwindow;

namespace attnviz::platform {

struct WindowOptions {
    Size size;  // screen coordinates
    std::string title;
    bool visible = true;   // a screenshot's window is hidden
    int swapInterval = 1;  // 1 waits for the display's refresh; 0 for a window that presents nothing
};

class Window {
public:
    // Throws NoWindow when no OpenGL 3.3 core window can be made or GL's functions cannot be loaded.
    Window(const GlfwLibrary& glfw, const WindowOptions& options);
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    GLFWwindow* handle() const { return m_window.get(); }
    bool shouldClose() const;
    Size size() const;
    Size framebufferSize() const;  // pixels
    float contentScale() const;    // pixels per screen coordinate the desktop asks for (x)
    void swapBuffers();
    void setTitle(const std::string& title);  // UTF-8

    // Fullscreen on the primary monitor, or back to the windowed position and size it had.
    void toggleFullscreen();
    bool fullscreen() const { return m_fullscreen; }
    // The size to open with next time: the window's, or the one it had before going fullscreen.
    Size windowedSize() const;

private:
    struct Destroy {
        void operator()(GLFWwindow* window) const;
    };
    std::unique_ptr<GLFWwindow, Destroy> m_window;
    bool m_fullscreen = false;
    int m_windowedX = 0, m_windowedY = 0;
    Size m_windowed;  // while fullscreen
};

}  // namespace attnviz::platform
