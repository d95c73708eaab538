// A checkpoint's head as the query–key map reads it: q and k of (layer, head) from the pass's kept
// qkv, after bias, q/k norm and rotary positions (a grouped-query head reads its kv head's keys).
#pragma once

#include "core/attention/query_key_map.hpp"
#include "core/models/decoder/decoder.hpp"

namespace attnviz::core {

// Throws InputError when the pass has no such layer or head.
QueryKeyMap runQueryKeyMap(const decoder::Run& run, const decoder::Config& config, int layer, int head);

}  // namespace attnviz::core
