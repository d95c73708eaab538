#include "core/io/imported_attention.hpp"

#include "core/attention/qk_tiles.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/float16.hpp"
#include "core/base/format.hpp"
#include "core/base/mapped_file.hpp"
#include "core/io/npy.hpp"
#include "core/models/run_maps.hpp"
#include "core/models/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {

namespace {

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() > 8) out += ", …";
    return out + "]";
}

const char* dtypeText(MapDType dtype) {
    switch (dtype) {
        case MapDType::F32: return "float32";
        case MapDType::F16: return "float16";
        case MapDType::BF16: return "bfloat16";
    }
    return "?";
}
std::size_t itemBytes(MapDType dtype) { return dtype == MapDType::F32 ? 4 : 2; }

// The four sizes of a shape [layers, heads, T_q, T_k] with the ranks a file may have (2: one head,
// 3: one layer), or nothing.
std::optional<std::array<std::int64_t, 4>> fourDims(const std::vector<std::int64_t>& shape) {
    if (shape.size() < 2 || shape.size() > 4) return std::nullopt;
    std::array<std::int64_t, 4> d{1, 1, 1, 1};
    std::copy(shape.begin(), shape.end(), d.begin() + static_cast<std::ptrdiff_t>(4 - shape.size()));
    return d;
}

std::string number(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return formatNumber(shortestDouble(v));
}

}  // namespace

double rowSumTolerance(MapDType dtype, bool bfloat16Values, Eigen::Index keys) {
    if (dtype == MapDType::F16) return kRowSumTolerance + std::ldexp(1.0, -11) + static_cast<double>(keys) * std::ldexp(1.0, -25);
    return kRowSumTolerance + (bfloat16Values ? std::ldexp(1.0, -8) : 0.0);
}

namespace {

// Whether every value of a float32 map has its low 16 bits zero: bfloat16 values widened.
template <class Row>
bool allBfloat16(Eigen::Index tq, Eigen::Index tk, Row row) {
    for (Eigen::Index i = 0; i < tq; ++i) {
        const auto r = row(i);
        for (Eigen::Index j = 0; j < tk; ++j)
            if ((std::bit_cast<std::uint32_t>(r(j)) & 0xFFFFu) != 0) return false;
    }
    return true;
}

// One map's values: "" or the first problem, "row 17 · key 4: weight nan is not a finite number".
// `row(i)(j)` gives element j of row i as a float; `dtype` is the file's. A float32 row past 1e-3
// is held to bfloat16's rounding when the whole map is bfloat16 values (looked at only then).
template <class Row>
std::string checkRows(Eigen::Index tq, Eigen::Index tk, Row row, MapDType dtype, bool& upperZero) {
    upperZero = true;
    bool anyWeight = false;
    std::optional<bool> bfloat16;  // of the whole map, once a row needs to know
    for (Eigen::Index i = 0; i < tq; ++i) {
        const auto r = row(i);
        double sum = 0;
        for (Eigen::Index j = 0; j < tk; ++j) {
            const float v = r(j);
            if (!std::isfinite(v))
                return "row " + std::to_string(i) + " · key " + std::to_string(j) + ": weight " + number(v) + " is not a finite number";
            if (v < 0) return "row " + std::to_string(i) + " · key " + std::to_string(j) + ": weight " + number(v) + " is negative";
            if (j > i && v != 0) upperZero = false;
            sum += v;
        }
        anyWeight = anyWeight || sum != 0;
        if (sum == 0 || std::abs(sum - 1) <= rowSumTolerance(dtype, false, tk)) continue;
        if (dtype == MapDType::F32 && !bfloat16) bfloat16 = allBfloat16(tq, tk, row);
        const bool bf16 = bfloat16.value_or(false);
        const double tolerance = rowSumTolerance(dtype, bf16, tk);
        if (std::abs(sum - 1) <= tolerance) continue;
        const std::string within = dtype == MapDType::F16 ? "±" + formatFixed(tolerance, 4) + ": 1e-3 and float16's rounding"
                                   : bf16 ? "±" + formatFixed(tolerance, 4) + ": 1e-3 and bfloat16's rounding, which the values show"
                                          : "±1e-3";
        return "row " + std::to_string(i) + ": weights sum to " + formatFixed(sum, 4) + ", not 1 (" + within +
               "; a row of zeros is allowed)";
    }
    if (tq > 0 && !anyWeight)
        return "holds no weight at all: every row is zero (what a file created but never filled, such as an interrupted "
               "export, holds)";
    return "";
}

// A map's place in the [layers × heads] list, layer-major.
std::size_t mapIndex(int layer, int head, int heads) {
    return static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(head);
}

float halfAt(const std::byte* p) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return halfToFloat(bits);
}

}  // namespace

struct ImportedAttention::Background {
    Progress progress;
    std::mutex lock;
    std::string error;  // guarded by lock
    std::atomic<bool> running{true};
    std::thread thread;
};

// The rows whose log-sum-exp is computed at once, the first time one of them is read.
constexpr Eigen::Index kLseRows = 512;

struct ImportedAttention::QueriesKeys {
    int kvHeads = 0, width = 0;
    std::vector<std::size_t> q, k;  // per layer: layer.N.q's and layer.N.k's first byte in the file
    float scale = 1;
    float softcap = 0;  // Gemma 2's soft-capping of the scaled scores, cap · tanh(s / cap); 0: none
    bool causal = true;
    std::vector<int> windows;  // per layer: its sliding window, 0 for none
    // Per map: each query's largest score and log-sum, by blocks of kLseRows rows, made once.
    struct Lse {
        std::mutex lock;
        std::vector<float> top, sum;
        std::vector<char> done;  // per block
    };
    std::unique_ptr<Lse[]> lse;
};

namespace {

// Rows [r0, r0 + n) of head `head` of a [heads, T, width] tensor whose first byte is `at`, widened
// to float32 into out [n, width].
void widenRows(std::span<const std::byte> bytes, std::size_t at, MapDType dtype, Eigen::Index t, int width, int head, Eigen::Index r0,
               Eigen::Index n, Mat& out) {
    out.resize(n, width);
    if (n == 0) return;  // (no row: nothing to read, and no buffer to read it into)
    const std::size_t item = itemBytes(dtype);
    const std::byte* p = bytes.data() + at +
                         (static_cast<std::size_t>(head) * static_cast<std::size_t>(t) + static_cast<std::size_t>(r0)) *
                             static_cast<std::size_t>(width) * item;
    const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(width);
    float* o = out.data();
    if (dtype == MapDType::F32) {
        std::memcpy(o, p, count * 4);
    } else if (dtype == MapDType::F16) {
        for (std::size_t i = 0; i < count; ++i) o[i] = halfAt(p + 2 * i);
    } else {
        for (std::size_t i = 0; i < count; ++i) {
            std::uint16_t bits;
            std::memcpy(&bits, p + 2 * i, 2);
            o[i] = bfloat16ToFloat(bits);
        }
    }
}

// A metadata value that is a number and nothing else (at most 64 characters); NaN otherwise.
double metadataNumber(const std::string& text) {
    if (text.empty() || text.size() > 64) return std::numeric_limits<double>::quiet_NaN();
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() ? v : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

ImportedAttention::~ImportedAttention() {
    if (!m_background) return;
    m_background->progress.cancel();
    if (m_background->thread.joinable()) m_background->thread.join();
}

void ImportedAttention::checkAllInBackground() const {
    if (m_background || checkedAll()) return;
    m_background = std::make_unique<Background>();
    Background* b = m_background.get();
    b->thread = std::thread([this, b] {
        try {
            checkAll(&b->progress);
        } catch (const InputError& e) {
            const std::lock_guard<std::mutex> guard(b->lock);
            b->error = e.message();
        } catch (const Cancelled&) {
        } catch (const std::bad_alloc&) {
            const std::lock_guard<std::mutex> guard(b->lock);
            b->error = m_path + ": out of memory while checking the maps";
        }
        b->running = false;
    });
}

ImportedAttention::CheckStatus ImportedAttention::checkStatus() const {
    CheckStatus status;
    const long long all = static_cast<long long>(m_layers) * m_heads;
    status.fraction = all == 0 ? 1.0 : static_cast<double>(m_checkedCount.load()) / static_cast<double>(all);
    if (changed()) status.error = m_path + ": changed while it was read; open it again";
    if (!m_background) return status;
    status.running = m_background->running;
    const std::lock_guard<std::mutex> guard(m_background->lock);
    if (status.error.empty()) status.error = m_background->error;
    return status;
}

std::shared_ptr<const ImportedAttention> ImportedAttention::open(const std::string& path, const ImportOptions& options,
                                                                 const Limits& limits) {
    std::shared_ptr<ImportedAttention> a(new ImportedAttention());
    a->m_path = path;
    a->m_options = options;
    a->m_mapping = MappedFile::open(path, "a .npy or safetensors file of attention weights");
    a->m_bytes = a->m_mapping->bytes();
    try {
        a->parse();
    } catch (const InputError&) {
        a->checkUnchanged();  // a header read as zeros is a file that changed, not a broken one
        throw;
    }
    a->checkUnchanged();

    // The tokens: the named file, or tokens.txt beside the file when there is one.
    std::string tokensPath = options.tokensFile;
    if (tokensPath.empty()) {
        const std::filesystem::path beside = std::filesystem::path(path).parent_path() / "tokens.txt";
        std::error_code ec;
        if (std::filesystem::is_regular_file(beside, ec)) tokensPath = beside.string();
    }
    std::vector<std::string> labels;
    if (!tokensPath.empty()) {
        const std::string text = readTextFile(tokensPath, kMaxTextFileBytes, "a tokens file");
        std::size_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a byte order mark is no part of the first token
        while (start < text.size()) {
            std::size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string line = text.substr(start, end - start);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty())
                throw InputError(tokensPath, "line " + std::to_string(labels.size() + 1) +
                                                 " is empty: one token a line, each shown as its label (a space is a token; "
                                                 "nothing is not)");
            labels.push_back(std::move(line));
            start = end + 1;
        }
    }
    a->setLabels(std::move(labels), tokensPath, limits);
    return a;
}

std::shared_ptr<const ImportedAttention> ImportedAttention::fromBytes(std::span<const std::byte> bytes, const std::string& name,
                                                                      std::vector<std::string> labels, const Limits& limits) {
    std::shared_ptr<ImportedAttention> a(new ImportedAttention());
    a->m_path = name;
    a->m_bytes = bytes;
    a->parse();
    const bool positions = labels.empty();
    a->setLabels(std::move(labels), positions ? "" : "tokens", limits);
    return a;
}

void ImportedAttention::setLabels(std::vector<std::string> labels, const std::string& tokensPath, const Limits& limits) {
    if (m_keys > limits.maxTokens)
        throw InputError(
            m_path, std::to_string(m_keys) + " keys are over the limit of " + std::to_string(limits.maxTokens) + " tokens (--max-tokens)");
    if (!tokensPath.empty() && static_cast<Eigen::Index>(labels.size()) != m_keys)
        throw InputError(tokensPath, "has " + std::to_string(labels.size()) + " tokens (one a line), the maps in " +
                                         clipPlace(m_path, 120) + " have " + std::to_string(m_keys) + " keys");
    m_tokensPath = tokensPath;
    if (tokensPath.empty())
        for (Eigen::Index j = 0; j < m_keys; ++j) labels.push_back(std::to_string(j));
    m_labels = std::move(labels);
    const auto count = static_cast<std::size_t>(m_layers) * static_cast<std::size_t>(m_heads);
    m_state = std::make_unique<std::atomic<std::uint8_t>[]>(count);
    for (std::size_t k = 0; k < count; ++k) m_state[k] = 0;
}

void ImportedAttention::parse() {
    if (m_bytes.size() >= 6 && std::memcmp(m_bytes.data(), "\x93NUMPY", 6) == 0) return parseNpy();
    if (m_bytes.size() >= 9 && static_cast<char>(m_bytes[8]) == '{') return parseSafetensors();
    throw InputError(m_path, "neither a .npy nor a safetensors file");
}

void ImportedAttention::parseNpy() {
    const NpyHeader h = parseNpyHeader(m_bytes, m_path);
    if (h.dtype != NpyDType::F32 && h.dtype != NpyDType::F16)
        throw InputError(m_path, "dtype " + h.descr + " is not supported: float32 or float16 (save with .astype(np.float32))");
    if (h.fortranOrder) throw InputError(m_path, "Fortran order is not supported: save a C-ordered array (np.ascontiguousarray)");
    std::vector<std::int64_t> shape(h.shape.begin(), h.shape.end());
    const auto dims = fourDims(shape);
    if (!dims) throw InputError(m_path, "shape " + h.shapeText + " is not [layers, heads, T_q, T_k], [heads, T, T] or [T, T]");
    const std::uint64_t after = m_bytes.size() - h.dataOffset;
    if (h.dataBytes > after)
        throw InputError(m_path, "truncated: shape " + h.shapeText + " needs " + h.dataBytesText + " bytes, the file has " +
                                     std::to_string(after) + " after its header");
    if (h.dataBytes < after)
        throw InputError(m_path, "the header's shape " + h.shapeText + " accounts for " + h.dataBytesText + " bytes but " +
                                     std::to_string(after) + " follow it: the header does not describe this file");
    m_dtype = h.dtype == NpyDType::F32 ? MapDType::F32 : MapDType::F16;
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) throw InputError(m_path, "shape " + h.shapeText + " holds no weights");
    m_layers = static_cast<int>(std::min<std::int64_t>((*dims)[0], 1 << 30));
    m_heads = static_cast<int>(std::min<std::int64_t>((*dims)[1], 1 << 30));
    m_queries = (*dims)[2];
    m_keys = (*dims)[3];
    if ((*dims)[0] > 4096 || (*dims)[1] > 4096)
        throw InputError(m_path, "shape " + h.shapeText + " has more than 4096 layers or heads: is it [layers, heads, T_q, T_k]?");
    if (m_queries > m_keys)
        throw InputError(m_path, "shape " + h.shapeText + " has more queries (T_q = " + std::to_string(m_queries) +
                                     ") than keys (T_k = " + std::to_string(m_keys) + "): the queries must be the first keys");
    const std::size_t layerBytes = static_cast<std::size_t>(m_heads) * static_cast<std::size_t>(m_queries * m_keys) * itemBytes(m_dtype);
    for (int l = 0; l < m_layers; ++l) m_layerOffset.push_back(h.dataOffset + static_cast<std::size_t>(l) * layerBytes);
}

void ImportedAttention::parseSafetensors() {
    const SafetensorsFile file = SafetensorsFile::fromBytes(m_bytes, m_path);
    const auto format = file.metadata().find("format");
    if ((format != file.metadata().end() && format->second == "attnviz-qk") || file.find("layer.0.q")) return parseQueriesKeys(file);
    const auto dtypeOf = [&](const TensorInfo& t) {
        if (t.dtype == DType::F32) return MapDType::F32;
        if (t.dtype == DType::F16) return MapDType::F16;
        const std::string advice = t.dtype == DType::BF16 ? "convert with .float() or .half()" : "convert with .float()";
        throw InputError(m_path + ": " + clipText(t.name, 60),
                         std::string("dtype ") + dtypeName(t.dtype) + " is not supported: F32 or F16 (" + advice + ")");
    };
    std::vector<const TensorInfo*> perLayer;  // one tensor a layer, or the one of every layer
    std::vector<std::int64_t> mapShape;       // [heads, T_q, T_k]
    if (const TensorInfo* all = file.find("attentions")) {
        if (file.tensors().size() > 1)
            throw InputError(m_path, "holds 'attentions' and " + std::to_string(file.tensors().size() - 1) +
                                         " other tensors: expected 'attentions' alone, or layer.0, layer.1, …");
        std::vector<std::int64_t> s = all->shape;
        if (s.size() == 5) {
            if (s[1] != 1)
                throw InputError(m_path + ": attentions", "shape " + shapeText(s) + " is a batch of " + std::to_string(s[1]) +
                                                              ": save one sequence (attentions[:, b])");
            s.erase(s.begin() + 1);
        }
        if (s.size() != 4)
            throw InputError(m_path + ": attentions", "shape " + shapeText(all->shape) + " is not [layers, heads, T_q, T_k]");
        m_dtype = dtypeOf(*all);
        mapShape.assign(s.begin() + 1, s.end());
        if (std::find(s.begin(), s.end(), 0) != s.end())
            throw InputError(m_path + ": attentions", "shape " + shapeText(all->shape) + " holds no weights");
        if (s[0] > 4096) throw InputError(m_path + ": attentions", "shape " + shapeText(all->shape) + " has more than 4096 layers");
        const std::size_t layerBytes = static_cast<std::size_t>(s[1] * s[2] * s[3]) * itemBytes(m_dtype);
        const auto base = static_cast<std::size_t>(file.bytes(*all).data() - m_bytes.data());
        for (std::int64_t l = 0; l < s[0]; ++l) m_layerOffset.push_back(base + static_cast<std::size_t>(l) * layerBytes);
    } else {
        // layer.0 … layer.{L-1}, no gap, nothing else
        std::map<long long, const TensorInfo*> byLayer;
        for (const TensorInfo& t : file.tensors()) {
            const std::string& n = t.name;
            const bool digits = n.size() > 6 && n.size() < 16 && n.compare(0, 6, "layer.") == 0 &&
                                std::all_of(n.begin() + 6, n.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                                (n.size() == 7 || n[6] != '0');
            if (!digits)
                throw InputError(m_path, "tensor " + quoteValue(oneLine(n)) +
                                             " is neither 'attentions' nor layer.N (one tensor a layer: layer.0, layer.1, …)");
            byLayer[std::stoll(n.substr(6))] = &t;
        }
        if (byLayer.empty()) throw InputError(m_path, "holds no tensors: expected 'attentions', or layer.0, layer.1, …");
        long long expect = 0;
        for (const auto& [l, t] : byLayer) {
            if (l != expect) {
                std::string found;
                int listed = 0;
                for (const auto& entry : byLayer) {
                    if (listed++ == 6) {
                        found += ", …";
                        break;
                    }
                    found += (found.empty() ? "layer." : ", layer.") + std::to_string(entry.first);
                }
                throw InputError(m_path, "no tensor 'layer." + std::to_string(expect) + "' (found " + found + ")");
            }
            ++expect;
        }
        if (byLayer.size() > 4096) throw InputError(m_path, std::to_string(byLayer.size()) + " layers are more than 4096");
        const TensorInfo& first = *byLayer.begin()->second;
        m_dtype = dtypeOf(first);
        for (const auto& [l, t] : byLayer) {
            std::vector<std::int64_t> s = t->shape;
            if (s.size() == 4) {
                if (s[0] != 1)
                    throw InputError(m_path + ": " + t->name, "shape " + shapeText(s) + " is a batch of " + std::to_string(s[0]) +
                                                                  ": save one sequence (attentions[l][b])");
                s.erase(s.begin());
            }
            if (s.size() != 3) throw InputError(m_path + ": " + t->name, "shape " + shapeText(t->shape) + " is not [heads, T_q, T_k]");
            if (dtypeOf(*t) != m_dtype)
                throw InputError(m_path + ": " + t->name,
                                 std::string("dtype ") + dtypeName(t->dtype) + " differs from layer.0's " + dtypeName(first.dtype));
            if (l == 0) mapShape = s;
            else if (s != mapShape)
                throw InputError(m_path, t->name + " is " + shapeText(s) + ", layer.0 " + shapeText(mapShape) +
                                             ": every layer's maps must have the same heads and T");
            if (std::find(s.begin(), s.end(), 0) != s.end())
                throw InputError(m_path + ": " + t->name, "shape " + shapeText(t->shape) + " holds no weights");
            m_layerOffset.push_back(static_cast<std::size_t>(file.bytes(*t).data() - m_bytes.data()));
        }
    }
    m_layers = static_cast<int>(m_layerOffset.size());
    if (mapShape[0] > 4096) throw InputError(m_path, "shape " + shapeText(mapShape) + " has more than 4096 heads");
    m_heads = static_cast<int>(mapShape[0]);
    m_queries = mapShape[1];
    m_keys = mapShape[2];
    if (m_queries > m_keys)
        throw InputError(m_path, "maps " + shapeText(mapShape) + " have more queries (T_q = " + std::to_string(m_queries) +
                                     ") than keys (T_k = " + std::to_string(m_keys) + "): the queries must be the first keys");
}

void ImportedAttention::parseQueriesKeys(const SafetensorsFile& file) {
    auto qk = std::make_unique<QueriesKeys>();
    const std::map<std::string, std::string>& meta = file.metadata();
    const auto field = [&](const char* key) -> const std::string* {
        const auto it = meta.find(key);
        return it == meta.end() ? nullptr : &it->second;
    };
    const std::string where = m_path + ": __metadata__";
    const std::string* format = field("format");
    if (!format || *format != "attnviz-qk")
        throw InputError(where,
                         "has no \"format\": \"attnviz-qk\" beside layer.N.q and layer.N.k (scripts/export_attention.py --qk writes it)");
    // scaling: the scores' factor, a positive number
    const std::string* scaling = field("scaling");
    if (!scaling) throw InputError(where, "has no \"scaling\": the factor of the scores q·k (1/sqrt(d_h) for most models)");
    if (const double v = metadataNumber(*scaling); std::isfinite(v) && v > 0 && v <= 1e6) qk->scale = static_cast<float>(v);
    else throw InputError(where + ".scaling", quoteValue(clipText(*scaling, 40)) + " is not a positive number");
    if (const std::string* causal = field("causal")) {
        if (*causal != "true" && *causal != "false")
            throw InputError(where + ".causal", quoteValue(clipText(*causal, 40)) + " is neither \"true\" nor \"false\"");
        qk->causal = *causal == "true";
    }
    // softcap: every layer's cap of the scaled scores (Gemma 2's attn_logit_softcapping), 0 for none
    if (const std::string* softcap = field("softcap")) {
        if (const double v = metadataNumber(*softcap); std::isfinite(v) && v >= 0 && v <= 1e6) qk->softcap = static_cast<float>(v);
        else
            throw InputError(where + ".softcap",
                             quoteValue(clipText(*softcap, 40)) + " is not a cap of the scores (a positive number, 0 for none)");
    }
    // layer.0.q, layer.0.k, layer.1.q, …: every layer both, nothing else
    std::map<long long, std::pair<const TensorInfo*, const TensorInfo*>> byLayer;
    for (const TensorInfo& t : file.tensors()) {
        const std::string& n = t.name;
        const bool named = n.size() > 8 && n.size() < 18 && n.compare(0, 6, "layer.") == 0 && (n.ends_with(".q") || n.ends_with(".k")) &&
                           std::all_of(n.begin() + 6, n.end() - 2, [](char c) { return c >= '0' && c <= '9'; }) &&
                           (n.size() == 9 || n[6] != '0');
        if (!named)
            throw InputError(m_path,
                             "tensor " + quoteValue(oneLine(n)) + " is neither layer.N.q nor layer.N.k (a file of queries and keys)");
        auto& entry = byLayer[std::stoll(n.substr(6, n.size() - 8))];
        (n.back() == 'q' ? entry.first : entry.second) = &t;
    }
    long long expect = 0;
    for (const auto& [l, pair] : byLayer) {
        if (l != expect)
            throw InputError(m_path, "no tensor 'layer." + std::to_string(expect) + ".q' (the layers must be 0, 1, … without a gap)");
        if (!pair.first || !pair.second)
            throw InputError(m_path, "no tensor 'layer." + std::to_string(l) + (pair.first ? ".k'" : ".q'") + " beside its " +
                                         (pair.first ? "queries" : "keys"));
        ++expect;
    }
    if (byLayer.empty()) throw InputError(m_path, "holds no tensors: expected layer.0.q, layer.0.k, …");
    if (byLayer.size() > 4096) throw InputError(m_path, std::to_string(byLayer.size()) + " layers are more than 4096");
    const DType first = byLayer.begin()->second.first->dtype;
    if (first != DType::BF16 && first != DType::F16 && first != DType::F32)
        throw InputError(m_path + ": layer.0.q", std::string("dtype ") + dtypeName(first) + " is not supported: BF16, F16 or F32");
    m_dtype = first == DType::BF16 ? MapDType::BF16 : first == DType::F16 ? MapDType::F16 : MapDType::F32;
    std::vector<std::int64_t> qShape, kShape;
    for (const auto& [l, pair] : byLayer)
        for (const TensorInfo* t : {pair.first, pair.second}) {
            std::vector<std::int64_t> s = t->shape;
            if (s.size() == 4) {
                if (s[0] != 1)
                    throw InputError(m_path + ": " + t->name,
                                     "shape " + shapeText(s) + " is a batch of " + std::to_string(s[0]) + ": save one sequence");
                s.erase(s.begin());
            }
            const bool isQ = t == pair.first;
            if (s.size() != 3)
                throw InputError(m_path + ": " + t->name,
                                 "shape " + shapeText(t->shape) + " is not [" + (isQ ? "heads" : "kv_heads") + ", T, d_h]");
            if (t->dtype != first)
                throw InputError(m_path + ": " + t->name,
                                 std::string("dtype ") + dtypeName(t->dtype) + " differs from layer.0.q's " + dtypeName(first));
            if (std::find(s.begin(), s.end(), 0) != s.end())
                throw InputError(m_path + ": " + t->name, "shape " + shapeText(t->shape) + " holds nothing");
            std::vector<std::int64_t>& want = isQ ? qShape : kShape;
            if (want.empty()) want = s;
            else if (s != want)
                throw InputError(m_path + ": " + t->name, "shape " + shapeText(s) + " differs from layer.0's " + shapeText(want) +
                                                              ": every layer's must be the same");
            (isQ ? qk->q : qk->k).push_back(static_cast<std::size_t>(file.bytes(*t).data() - m_bytes.data()));
        }
    if (qShape[1] != kShape[1] || qShape[2] != kShape[2])
        throw InputError(m_path + ": layer.0.k",
                         "shape " + shapeText(kShape) + " does not match the queries' " + shapeText(qShape) + " in T and d_h");
    if (qShape[0] > 4096 || qShape[2] > 16384)
        throw InputError(m_path + ": layer.0.q", "shape " + shapeText(qShape) + " has more than 4096 heads or a head wider than 16384");
    if (qShape[0] % kShape[0] != 0)
        throw InputError(m_path + ": layer.0.k", std::to_string(kShape[0]) + " kv heads do not divide the " + std::to_string(qShape[0]) +
                                                     " query heads evenly (grouped-query attention)");
    m_layers = static_cast<int>(byLayer.size());
    m_heads = static_cast<int>(qShape[0]);
    m_queries = m_keys = qShape[1];
    qk->kvHeads = static_cast<int>(kShape[0]);
    qk->width = static_cast<int>(qShape[2]);
    qk->windows.assign(static_cast<std::size_t>(m_layers), 0);
    if (const std::string* windows = field("sliding_windows")) {
        const auto count = static_cast<std::size_t>(std::count(windows->begin(), windows->end(), ',')) + 1;
        if (count != static_cast<std::size_t>(m_layers))
            throw InputError(where + ".sliding_windows", "holds " + std::to_string(count) + " windows, the file " +
                                                             std::to_string(m_layers) + " layers (one a layer, 0 for none)");
        std::size_t start = 0;
        for (int& window : qk->windows) {
            std::size_t end = windows->find(',', start);
            if (end == std::string::npos) end = windows->size();
            const std::string item = windows->substr(start, std::min<std::size_t>(end - start, 20));
            char* stop = nullptr;
            const long long v = item.empty() || end - start > 20 ? -1 : std::strtoll(item.c_str(), &stop, 10);
            if (v < 0 || stop != item.c_str() + item.size() || v > (1LL << 30) || !std::isdigit(static_cast<unsigned char>(item[0])))
                throw InputError(where + ".sliding_windows", "item " + std::to_string(&window - qk->windows.data()) + " " +
                                                                 quoteValue(clipText(item, 20)) + " is not a window of keys (0 for none)");
            window = static_cast<int>(v);
            start = end + 1;
        }
        if (!qk->causal && std::any_of(qk->windows.begin(), qk->windows.end(), [](int w) { return w > 0; }))
            throw InputError(where + ".sliding_windows", "a window needs \"causal\": \"true\"");
    }
    qk->lse = std::make_unique<QueriesKeys::Lse[]>(static_cast<std::size_t>(m_layers) * static_cast<std::size_t>(m_heads));
    m_qk = std::move(qk);
}

int ImportedAttention::kvHeadOf(int head) const { return m_qk ? head / (m_heads / m_qk->kvHeads) : head; }

int ImportedAttention::headWidth() const { return m_qk ? m_qk->width : 0; }

float ImportedAttention::softcap() const { return m_qk ? m_qk->softcap : 0.0f; }

std::string ImportedAttention::checkQueriesKeys(int layer, int head) const {
    Mat rows;
    const auto l = static_cast<std::size_t>(layer);
    const int width = m_qk->width;
    double longest[2] = {0, 0};  // the longest query's and key's length
    for (const bool isQ : {true, false}) {
        const int h = isQ ? head : kvHeadOf(head);
        for (Eigen::Index r0 = 0; r0 < m_queries; r0 += kLseRows) {
            const Eigen::Index n = std::min(kLseRows, m_queries - r0);
            widenRows(m_bytes, isQ ? m_qk->q[l] : m_qk->k[l], m_dtype, m_queries, width, h, r0, n, rows);
            if (rows.allFinite()) {
                longest[isQ ? 0 : 1] = std::max(longest[isQ ? 0 : 1], std::sqrt(rows.cast<double>().rowwise().squaredNorm().maxCoeff()));
                continue;
            }
            for (Eigen::Index r = 0; r < n; ++r)
                for (int c = 0; c < width; ++c)
                    if (!std::isfinite(rows(r, c)))
                        return "layer " + std::to_string(layer) + " · head " + std::to_string(head) + " · " + (isQ ? "query " : "key ") +
                               std::to_string(r0 + r) + " · element " + std::to_string(c) + ": " + number(rows(r, c)) +
                               " is not a finite number";
        }
    }
    // |q · k| ≤ |q| |k|: scores that could pass float32's range (3.4e38) are refused here, not met later
    if (longest[0] * longest[1] > 1e36)
        return "layer " + std::to_string(layer) + " · head " + std::to_string(head) + ": a query of length " + formatNumber(longest[0]) +
               " and a key of length " + formatNumber(longest[1]) + " give scores past float32's range";
    return "";
}

void ImportedAttention::weightTiles(int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1,
                                    TileSink& sink) const {
    if (!m_qk || layer < 0 || layer >= m_layers || head < 0 || head >= m_heads || r0 < 0 || n < 0 || r0 + n > m_queries)
        throw std::invalid_argument("ImportedAttention::weightTiles: not a file of queries and keys, or rows outside it");
    if (n == 0) return;
    const QkMask mask{.scale = m_qk->scale,
                      .causal = m_qk->causal,
                      .window = m_qk->windows[static_cast<std::size_t>(layer)],
                      .hidden = nullptr,
                      .softcap = m_qk->softcap};
    const auto l = static_cast<std::size_t>(layer);
    const int width = m_qk->width, kv = kvHeadOf(head);
    QueriesKeys::Lse& lse = m_qk->lse[mapIndex(layer, head, m_heads)];
    thread_local Mat q, k;
    // 1. the rows' log-sum-exp, each block of kLseRows the first time it is read (made outside the
    // lock, so that threads reading other rows of the map make theirs at once)
    {
        const std::lock_guard<std::mutex> guard(lse.lock);
        if (lse.top.empty()) {
            lse.top.assign(static_cast<std::size_t>(m_queries), 0.0f);
            lse.sum.assign(static_cast<std::size_t>(m_queries), 0.0f);
            lse.done.assign(static_cast<std::size_t>((m_queries + kLseRows - 1) / kLseRows), 0);
        }
    }
    std::vector<float> top, sum;
    for (Eigen::Index b = r0 / kLseRows; b * kLseRows < r0 + n; ++b) {
        {
            const std::lock_guard<std::mutex> guard(lse.lock);
            if (lse.done[static_cast<std::size_t>(b)]) continue;
        }
        const Eigen::Index b0 = b * kLseRows, rows = std::min(kLseRows, m_queries - b0);
        const Eigen::Index keyEnd = readableKeys(mask, b0 + rows - 1, m_keys).hi;
        widenRows(m_bytes, m_qk->q[l], m_dtype, m_queries, width, head, b0, rows, q);
        widenRows(m_bytes, m_qk->k[l], m_dtype, m_keys, width, kv, 0, keyEnd, k);
        top.resize(static_cast<std::size_t>(rows));
        sum.resize(static_cast<std::size_t>(rows));
        if (!logSumExp(q, k, mask, m_keys, b0, top.data(), sum.data()))
            throw InputError(m_path, "layer " + std::to_string(layer) + " · head " + std::to_string(head) +
                                         ": a score q·k overflows float32 (the queries and keys are too large)");
        const std::lock_guard<std::mutex> guard(lse.lock);
        std::copy(top.begin(), top.end(), lse.top.begin() + b0);
        std::copy(sum.begin(), sum.end(), lse.sum.begin() + b0);
        lse.done[static_cast<std::size_t>(b)] = 1;
    }
    // 2. the weights, a tile at a time, from the keys the rows read
    const KeyRange range = tileKeyRange(mask, m_keys, r0, n, k0, k1);
    widenRows(m_bytes, m_qk->q[l], m_dtype, m_queries, width, head, r0, n, q);
    widenRows(m_bytes, m_qk->k[l], m_dtype, m_keys, width, kv, range.first, range.end - range.first, k);
    core::weightTiles(q, k, range, lse.top.data(), lse.sum.data(), mask, m_keys, r0, k0, k1, sink);
}

std::string ImportedAttention::describe() const {
    std::string name = std::filesystem::path(m_path).filename().string();
    std::string out = clipText(name, 60) + " · " + std::to_string(m_layers) + (m_layers == 1 ? " layer × " : " layers × ") +
                      std::to_string(m_heads) + (m_heads == 1 ? " head · " : " heads · ");
    out +=
        m_queries == m_keys ? "T = " + std::to_string(m_keys) : "T_q = " + std::to_string(m_queries) + ", T_k = " + std::to_string(m_keys);
    if (m_qk) return out + " · " + dtypeText(m_dtype) + " queries and keys, every map made on demand";
    return out + " · " + dtypeText(m_dtype);
}

std::span<const std::byte> ImportedAttention::mapBytes(int layer, int head) const {
    if (m_qk) throw std::logic_error("a file of queries and keys holds no map's bytes");
    const std::size_t mapBytes = static_cast<std::size_t>(m_queries * m_keys) * itemBytes(m_dtype);
    return m_bytes.subspan(m_layerOffset[static_cast<std::size_t>(layer)] + static_cast<std::size_t>(head) * mapBytes, mapBytes);
}

void ImportedAttention::release(int layer, int head) const {
    if (!m_mapping || m_qk) return;
    const auto b = mapBytes(layer, head);
    m_mapping->release(static_cast<std::uint64_t>(b.data() - m_bytes.data()), b.size());
}

void ImportedAttention::checkUnchanged() const {
    if (m_mapping) m_mapping->checkUnchanged();
}

bool ImportedAttention::changed() const { return m_mapping && m_mapping->changed(); }

bool ImportedAttention::checked(int layer, int head) const { return (m_state[mapIndex(layer, head, m_heads)] & kChecked) != 0; }

std::string ImportedAttention::checkMap(int layer, int head) const {
    bool upperZero = m_qk && m_qk->causal;
    std::string problem;
    if (m_qk) {
        problem = checkQueriesKeys(layer, head);
        if (!problem.empty()) return problem;
    } else if (m_dtype == MapDType::F32) {
        const auto b = mapBytes(layer, head);
        problem = checkRows(
            m_queries, m_keys,
            [&](Eigen::Index i) {
                const std::byte* row = b.data() + static_cast<std::size_t>(i * m_keys) * 4;
                return [row](Eigen::Index j) {
                    float v;
                    std::memcpy(&v, row + static_cast<std::size_t>(j) * 4, 4);
                    return v;
                };
            },
            m_dtype, upperZero);
    } else {
        const auto b = mapBytes(layer, head);
        problem = checkRows(
            m_queries, m_keys,
            [&](Eigen::Index i) {
                const std::byte* row = b.data() + static_cast<std::size_t>(i * m_keys) * 2;
                return [row](Eigen::Index j) { return halfAt(row + static_cast<std::size_t>(j) * 2); };
            },
            m_dtype, upperZero);
    }
    if (!problem.empty()) return "layer " + std::to_string(layer) + " · head " + std::to_string(head) + " · " + problem;
    const bool causal = upperZero && m_queries == m_keys;
    const std::uint8_t before =
        m_state[mapIndex(layer, head, m_heads)].exchange(static_cast<std::uint8_t>(kChecked | (causal ? kUpperZero : 0)));
    if ((before & kChecked) == 0) ++m_checkedCount;  // two threads may check one map: counted once
    return "";
}

void ImportedAttention::check(std::span<const std::pair<int, int>> maps, Progress* progress) const {
    std::vector<std::pair<int, int>> todo;
    for (const auto& [l, h] : maps)
        if (!checked(l, h)) todo.emplace_back(l, h);
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    expect(progress, todo.size());
    std::vector<std::string> problems(todo.size());
    std::atomic<bool> stop{false};
    const auto n = static_cast<std::ptrdiff_t>(todo.size());
    // 1. each map's values, its pages read in large calls first and given back after
#pragma omp parallel for schedule(dynamic)
    for (std::ptrdiff_t k = 0; k < n; ++k) {
        if (stop) continue;
        const auto [l, h] = todo[static_cast<std::size_t>(k)];
        if (m_mapping && !m_qk) {
            const auto b = mapBytes(l, h);
            m_mapping->populate(static_cast<std::uint64_t>(b.data() - m_bytes.data()), b.size());
        }
        problems[static_cast<std::size_t>(k)] = checkMap(l, h);
        release(l, h);
        if (!problems[static_cast<std::size_t>(k)].empty()) stop = true;
        if (progress) {
            if (progress->cancelled()) stop = true;
            else progress->advance(1);
        }
    }
    // 2. a file that changed is reported as such, not as bad values; then the first bad map
    checkUnchanged();
    for (const std::string& p : problems)
        if (!p.empty()) throw InputError(m_path, p);
    core::check(static_cast<const Progress*>(progress));
}

void ImportedAttention::checkLayer(int layer, Progress* progress) const {
    std::vector<std::pair<int, int>> maps;
    maps.reserve(static_cast<std::size_t>(m_heads));
    for (int h = 0; h < m_heads; ++h) maps.emplace_back(layer, h);
    check(maps, progress);
}

void ImportedAttention::checkAll(Progress* progress) const {
    std::vector<std::pair<int, int>> maps;
    maps.reserve(static_cast<std::size_t>(m_layers) * static_cast<std::size_t>(m_heads));
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h) maps.emplace_back(l, h);
    check(maps, progress);
}

Settings ImportedAttention::layerSettings(int layer) const {
    Settings s;
    if (m_qk) {
        s.causal = m_qk->causal;
        s.window = m_qk->windows[static_cast<std::size_t>(layer)];
        return s;
    }
    s.causal = m_queries == m_keys;
    for (int h = 0; h < m_heads; ++h) s.causal = s.causal && (m_state[mapIndex(layer, h, m_heads)] & kUpperZero) != 0;
    return s;
}

bool ImportedAttention::widens() const {
    if (m_dtype != MapDType::F32 || m_qk) return true;
    return std::any_of(m_layerOffset.begin(), m_layerOffset.end(),
                       [&](std::size_t offset) { return reinterpret_cast<std::uintptr_t>(m_bytes.data() + offset) % alignof(float) != 0; });
}

void ImportedAttention::copyWeights(int layer, int head, float* out) const {
    if (m_qk) {
        Eigen::Map<Mat> map(out, m_queries, m_keys);
        RowsSink sink(map, 0);
        weightTiles(layer, head, 0, m_queries, 0, -1, sink);
        return;
    }
    const auto b = mapBytes(layer, head);
    if (m_dtype == MapDType::F32) std::memcpy(out, b.data(), b.size());
    else
        for (std::size_t i = 0; i < b.size() / 2; ++i) out[i] = halfAt(b.data() + 2 * i);
}

MatRef ImportedAttention::weights(int layer, int head, std::vector<float>& scratch) const {
    if (!m_qk) {
        const auto b = mapBytes(layer, head);
        if (m_dtype == MapDType::F32 && reinterpret_cast<std::uintptr_t>(b.data()) % alignof(float) == 0)
            return Eigen::Map<const Mat>(reinterpret_cast<const float*>(b.data()), m_queries, m_keys);
    }
    scratch.resize(static_cast<std::size_t>(m_queries * m_keys));
    copyWeights(layer, head, scratch.data());
    return Eigen::Map<const Mat>(scratch.data(), m_queries, m_keys);
}

AttentionMaps importedMaps(std::shared_ptr<const ImportedAttention> imported, std::vector<std::string> labels) {
    AttentionMaps maps;
    const ImportedAttention& a = *imported;
    maps.layers = a.layers();
    maps.heads = a.heads();
    maps.queries = a.queries();
    maps.keys = a.keys();
    maps.ids = idsOfLabels(a.labels());
    maps.kinds = punctuationKinds(a.labels());
    maps.labels = std::move(labels);
    for (int l = 0; l < a.layers(); ++l) maps.settings.push_back(a.layerSettings(l));
    if (a.queriesAndKeys()) {  // every map made on demand, a tile at a time
        for (int h = 0; h < a.heads(); ++h) maps.kvHead.push_back(a.kvHeadOf(h));
        maps.tiles = [imported](int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1, TileSink& sink) {
            imported->weightTiles(layer, head, r0, n, k0, k1, sink);
        };
        maps.rows = [imported](int layer, int head, Eigen::Index r0, const Eigen::Ref<Mat>& out) {
            RowsSink sink(out, r0);
            imported->weightTiles(layer, head, r0, out.rows(), 0, -1, sink);
        };
        return maps;
    }
    // One slot a map: the widened copy (when one is needed) and how many readers hold it.
    struct Slot {
        std::mutex lock;
        std::vector<float> data;
        int readers = 0;
    };
    struct Slots {
        std::shared_ptr<const ImportedAttention> imported;
        std::unique_ptr<Slot[]> slots;
    };
    auto slots = std::make_shared<Slots>();
    slots->imported = std::move(imported);
    slots->slots = std::make_unique<Slot[]>(static_cast<std::size_t>(maps.count()));
    const int heads = maps.heads;
    maps.weights = [slots, heads](int layer, int head) {
        Slot& s = slots->slots[mapIndex(layer, head, heads)];
        const std::lock_guard<std::mutex> guard(s.lock);
        ++s.readers;
        if (!s.data.empty()) return MatRef(Eigen::Map<const Mat>(s.data.data(), slots->imported->queries(), slots->imported->keys()));
        std::vector<float> scratch;
        const MatRef w = slots->imported->weights(layer, head, scratch);
        if (scratch.empty()) return w;  // in place: nothing to keep
        s.data = std::move(scratch);
        return MatRef(Eigen::Map<const Mat>(s.data.data(), w.rows(), w.cols()));
    };
    maps.done = [slots, heads](int layer, int head) {
        Slot& s = slots->slots[mapIndex(layer, head, heads)];
        const std::lock_guard<std::mutex> guard(s.lock);
        if (s.readers > 0 && --s.readers > 0) return;
        std::vector<float>().swap(s.data);
        slots->imported->release(layer, head);
    };
    return maps;
}

std::uint64_t layerMapBytes(const ImportedAttention& imported) {
    return static_cast<std::uint64_t>(imported.heads()) * static_cast<std::uint64_t>(imported.queries()) *
           static_cast<std::uint64_t>(imported.keys()) * sizeof(float);
}

bool layerMadeWhole(const ImportedAttention& imported, const Limits& limits) {
    if (!imported.queriesAndKeys()) return true;
    const std::uint64_t copy = layerMapBytes(imported);
    return copy <= limits.shownLayerBytes && copy <= limits.maxBytes;
}

ImportedLayer importedLayer(const ImportedAttention& imported, int layer, const Limits& limits) {
    if (layer < 0 || layer >= imported.layers())
        throw InputError("layer", std::to_string(layer) + " is not a layer of " + clipPlace(imported.path(), 120) + " (0 … " +
                                      std::to_string(imported.layers() - 1) + ")");
    if (!layerMadeWhole(imported, limits)) {  // the views read the layer from the file, made on demand
        imported.checkLayer(layer);
        ImportedLayer out;
        const auto& labels = imported.labels();
        out.model.keyTokens = labels;
        out.model.queryTokens = labels;
        out.model.heads = imported.heads();
        out.forward.heads.resize(static_cast<std::size_t>(imported.heads()));
        out.settings = imported.layerSettings(layer);
        out.whole = false;
        return out;
    }
    // What is copied and widened counts before it is allocated: the layer's copy, and one widened
    // map a core while the views of every layer sweep a file whose maps are not floats in place.
    const std::uint64_t mapFloats = static_cast<std::uint64_t>(imported.queries()) * static_cast<std::uint64_t>(imported.keys());
    const std::uint64_t copy = layerMapBytes(imported);
    std::uint64_t cores = 1;
#ifdef _OPENMP
    cores = static_cast<std::uint64_t>(omp_get_max_threads());
#endif
    const std::uint64_t widened = imported.widens() ? cores * mapFloats * sizeof(float) : 0;
    if (copy + widened > limits.maxBytes)
        throw InputError(
            "--max-memory",
            "the shown layer's " + std::to_string(imported.heads()) + " maps of " + std::to_string(imported.queries()) + " x " +
                std::to_string(imported.keys()) + " need " + formatBytes(copy) +
                (widened ? " and widening them to float32 for the views of every layer " + formatBytes(widened) + " more (a map a core)"
                         : std::string()) +
                ", over the limit of " + formatBytes(limits.maxBytes));
    imported.checkLayer(layer);
    ImportedLayer out;
    const auto& labels = imported.labels();
    out.model.keyTokens = labels;
    out.model.queryTokens.assign(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(imported.queries()));
    out.model.heads = imported.heads();
    out.forward.heads.resize(static_cast<std::size_t>(imported.heads()));
    for (int h = 0; h < imported.heads(); ++h) {
        Mat& w = out.forward.heads[static_cast<std::size_t>(h)].weights;
        w.resize(imported.queries(), imported.keys());
        imported.copyWeights(layer, h, w.data());
        imported.release(layer, h);
    }
    imported.checkUnchanged();
    out.settings = imported.layerSettings(layer);
    return out;
}

}  // namespace attnviz::core
