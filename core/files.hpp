// Writing files safely: everything goes to a temporary file beside the target and is renamed
// over it only when complete, so a failure (full disk, no permission) never leaves a
// half-written or destroyed file. A symbolic link is followed (the file it names is replaced);
// a device or a pipe (/dev/null, a FIFO) is written in place, never replaced by a file.
#pragma once

#include <string>
#include <string_view>

namespace attnviz::core {

// Throws InputError(path, reason) on failure; the old file, if any, is untouched.
void writeFileAtomic(const std::string& path, std::string_view bytes);

}  // namespace attnviz::core
