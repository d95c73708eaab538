// What the tests of refused input share: the message an InputError carries.
#pragma once

#include "core/base/error.hpp"

#include <string>

namespace attnviz::testfs {

// The message of the InputError `body` throws, or "(no error)".
template <class Body>
std::string errorOf(Body&& body) {
    try {
        body();
    } catch (const core::InputError& e) {
        return e.message();
    }
    return "(no error)";
}

}  // namespace attnviz::testfs
