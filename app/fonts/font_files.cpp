#include "app/fonts/font_files.hpp"

#include "core/base/error.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace attnviz::fonts {
namespace fs = std::filesystem;

namespace {

bool isFile(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

// Depth-first search below root for fileName; unreadable folders are skipped, not errors.
std::string searchBelow(const fs::path& root, const std::string& fileName) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return {};
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec))
        if (it->path().filename() == fileName && isFile(it->path())) return it->path().string();
    return {};
}

}  // namespace

std::string findFont(const std::string& fileName) {
    std::vector<fs::path> folders;
    if (const char* dir = std::getenv("ATTNVIZ_FONT_DIR"); dir && *dir) folders.emplace_back(dir);
    folders.emplace_back("/usr/share/fonts/truetype/dejavu");
    folders.emplace_back("/usr/share/fonts/TTF");
    for (const fs::path& folder : folders)
        if (isFile(folder / fileName)) return (folder / fileName).string();
    if (std::string found = searchBelow("/usr/share/fonts", fileName); !found.empty()) return found;
    throw core::InputError("fonts", fileName + " not found; install fonts-dejavu-core");
}

const std::string& fontBytes(const std::string& fileName) {
    // Entries are never removed, so references handed out stay valid for the whole process.
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<const std::string>> cache;
    const std::lock_guard lock(mutex);
    if (const auto it = cache.find(fileName); it != cache.end()) return *it->second;

    const std::string path = findFont(fileName);
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw core::InputError(path, "cannot read the font file");
    const std::streamoff size = in.tellg();
    auto bytes = std::make_unique<std::string>(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
    in.seekg(0);
    if (size < 0 || !in.read(bytes->data(), size)) throw core::InputError(path, "cannot read the font file");
    if (bytes->empty()) throw core::InputError(path, "the font file is empty");
    return *cache.emplace(fileName, std::move(bytes)).first->second;
}

}  // namespace attnviz::fonts
