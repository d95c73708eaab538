// The GLFW library for the life of the object: a display is checked for, GLFW is initialised with
// an error callback, and terminated in the destructor (after every window it made is gone).
#pragma once

#include <stdexcept>
#include <string>

namespace attnviz::platform {

// Why no window can be had; what() is the reason alone ("no display (…)", "cannot open a window
// (<GLFW's error>)", "OpenGL 3.3 is not available"), for the caller to put in its own message.
class NoWindow : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A size in screen coordinates (or in pixels, where a function says so).
struct Size {
    int width = 0, height = 0;
};

class GlfwLibrary {
public:
    // Throws NoWindow when neither DISPLAY nor WAYLAND_DISPLAY is set, or when glfwInit fails.
    GlfwLibrary();
    ~GlfwLibrary();
    GlfwLibrary(const GlfwLibrary&) = delete;
    GlfwLibrary& operator=(const GlfwLibrary&) = delete;

    // The text of GLFW's last error ("" before any).
    static const std::string& lastError();
    // `size` clipped to the primary monitor's video mode (unchanged when there is none).
    Size fitToMonitor(Size size) const;
};

}  // namespace attnviz::platform
