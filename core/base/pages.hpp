// Large buffers in huge pages. A buffer of megabytes written once in full (a checkpoint's packed
// weights, a pass's kept matrices) costs its page faults: one per 4 KiB page, which on a virtual
// machine can take over 10 µs each (a pass over 128 tokens of GPT-2 small writes 32 MB: 8,000
// faults). Mapped with transparent huge pages where the kernel offers them, the same buffer
// takes one fault per 2 MiB.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace attnviz::core {

// Zeroed, page-aligned memory of `bytes`, in huge pages where the kernel offers them; throws
// std::bad_alloc. unmapPages gives it back.
void* mapPages(std::size_t bytes);
void unmapPages(void* address, std::size_t bytes);

// A std::allocator that maps buffers of 1 MiB and more with mapPages. Elements are
// default-initialised (a vector's resize leaves floats unset: its users write every one, and
// zeroing 300 MB that are written next costs a tenth of a second).
template <class T>
struct PageAllocator {
    using value_type = T;
    static constexpr std::size_t kMappedBytes = std::size_t{1} << 20;

    PageAllocator() = default;
    template <class U>
    explicit PageAllocator(const PageAllocator<U>& /*other*/) {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
        const std::size_t bytes = n * sizeof(T);
        return static_cast<T*>(bytes >= kMappedBytes ? mapPages(bytes) : ::operator new(bytes));
    }
    void deallocate(T* p, std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes >= kMappedBytes) unmapPages(p, bytes);
        else ::operator delete(p);
    }
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    friend bool operator==(const PageAllocator&, const PageAllocator&) { return true; }
};

}  // namespace attnviz::core
