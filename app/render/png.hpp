// PNG encoding of 8-bit pixels (stb_image_write, compiled into Debian's libstb).
#pragma once

#include <cstdint>
#include <string>

namespace attnviz::render {

// rgba: [height, width, 4] row-major, top row first. Written as RGB: images here are opaque.
// Throws core::InputError("image", …) if encoding fails.
std::string encodeRgbaPng(const std::uint8_t* rgba, int width, int height);

}  // namespace attnviz::render
