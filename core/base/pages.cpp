#include "core/base/pages.hpp"

#include <sys/mman.h>

namespace attnviz::core {

void* mapPages(std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages the mapping still works
    return p;
}

void unmapPages(void* address, std::size_t bytes) {
    if (address) ::munmap(address, bytes);
}

}  // namespace attnviz::core
