#include "app/render/png.hpp"

#include "core/base/error.hpp"

#include <stb_image_write.h>

#include <vector>

namespace attnviz::render {

std::string encodeRgbaPng(const std::uint8_t* rgba, int width, int height) {
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
    for (std::size_t i = 0, j = 0; j < rgb.size(); i += 4, j += 3) {
        rgb[j] = rgba[i];
        rgb[j + 1] = rgba[i + 1];
        rgb[j + 2] = rgba[i + 2];
    }
    std::string png;
    const auto append = [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
    };
    if (!stbi_write_png_to_func(append, &png, width, height, 3, rgb.data(), width * 3))
        throw core::InputError("image", "PNG encoding failed");
    return png;
}

}  // namespace attnviz::render
