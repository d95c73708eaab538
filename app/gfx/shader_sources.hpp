// The files of shaders/, compiled into the binary (generated shader_sources.cpp).
#pragma once

#include <vector>

namespace attnviz::gfx {

struct ShaderFile {
    const char* name;  // "heatmap.frag"
    const char* text;
};
const std::vector<ShaderFile>& shaderFiles();

}  // namespace attnviz::gfx
