#include "app/platform/glfw_library.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdlib>

namespace attnviz::platform {
namespace {

std::string g_glfwError;

void onGlfwError(int, const char* description) { g_glfwError = description ? description : "unknown error"; }

bool isSet(const char* name) {
    const char* value = std::getenv(name);
    return value && *value;
}

}  // namespace

GlfwLibrary::GlfwLibrary() {
    if (!isSet("DISPLAY") && !isSet("WAYLAND_DISPLAY")) throw NoWindow("no display (DISPLAY and WAYLAND_DISPLAY are unset)");
    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit()) throw NoWindow("cannot open a window (" + g_glfwError + ")");
}

GlfwLibrary::~GlfwLibrary() { glfwTerminate(); }

const std::string& GlfwLibrary::lastError() { return g_glfwError; }

Size GlfwLibrary::fitToMonitor(Size size) const {
    GLFWmonitor* monitor = glfwGetPrimaryMonitor();
    if (const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr) {
        size.width = std::min(size.width, mode->width);
        size.height = std::min(size.height, mode->height);
    }
    return size;
}

}  // namespace attnviz::platform
