#include "core/io/imported_attention.hpp"

#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/float16.hpp"
#include "core/base/format.hpp"
#include "core/base/mapped_file.hpp"
#include "core/io/npy.hpp"
#include "core/models/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
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

const char* dtypeText(MapDType dtype) { return dtype == MapDType::F32 ? "float32" : "float16"; }
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

std::string ImportedAttention::describe() const {
    std::string name = std::filesystem::path(m_path).filename().string();
    std::string out = clipText(name, 60) + " · " + std::to_string(m_layers) + (m_layers == 1 ? " layer × " : " layers × ") +
                      std::to_string(m_heads) + (m_heads == 1 ? " head · " : " heads · ");
    out +=
        m_queries == m_keys ? "T = " + std::to_string(m_keys) : "T_q = " + std::to_string(m_queries) + ", T_k = " + std::to_string(m_keys);
    return out + " · " + dtypeText(m_dtype);
}

std::span<const std::byte> ImportedAttention::mapBytes(int layer, int head) const {
    const std::size_t mapBytes = static_cast<std::size_t>(m_queries * m_keys) * itemBytes(m_dtype);
    return m_bytes.subspan(m_layerOffset[static_cast<std::size_t>(layer)] + static_cast<std::size_t>(head) * mapBytes, mapBytes);
}

void ImportedAttention::release(int layer, int head) const {
    if (!m_mapping) return;
    const auto b = mapBytes(layer, head);
    m_mapping->release(static_cast<std::uint64_t>(b.data() - m_bytes.data()), b.size());
}

void ImportedAttention::checkUnchanged() const {
    if (m_mapping) m_mapping->checkUnchanged();
}

bool ImportedAttention::changed() const { return m_mapping && m_mapping->changed(); }

bool ImportedAttention::checked(int layer, int head) const { return (m_state[mapIndex(layer, head, m_heads)] & kChecked) != 0; }

std::string ImportedAttention::checkMap(int layer, int head) const {
    const auto b = mapBytes(layer, head);
    bool upperZero = true;
    std::string problem;
    if (m_dtype == MapDType::F32) {
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
        const auto b = mapBytes(l, h);
        if (m_mapping) m_mapping->populate(static_cast<std::uint64_t>(b.data() - m_bytes.data()), b.size());
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
    s.causal = m_queries == m_keys;
    for (int h = 0; h < m_heads; ++h) s.causal = s.causal && (m_state[mapIndex(layer, h, m_heads)] & kUpperZero) != 0;
    return s;
}

bool ImportedAttention::widens() const {
    if (m_dtype == MapDType::F16) return true;
    return std::any_of(m_layerOffset.begin(), m_layerOffset.end(),
                       [&](std::size_t offset) { return reinterpret_cast<std::uintptr_t>(m_bytes.data() + offset) % alignof(float) != 0; });
}

void ImportedAttention::copyWeights(int layer, int head, float* out) const {
    const auto b = mapBytes(layer, head);
    if (m_dtype == MapDType::F32) std::memcpy(out, b.data(), b.size());
    else
        for (std::size_t i = 0; i < b.size() / 2; ++i) out[i] = halfAt(b.data() + 2 * i);
}

MatRef ImportedAttention::weights(int layer, int head, std::vector<float>& scratch) const {
    const auto b = mapBytes(layer, head);
    if (m_dtype == MapDType::F32 && reinterpret_cast<std::uintptr_t>(b.data()) % alignof(float) == 0)
        return Eigen::Map<const Mat>(reinterpret_cast<const float*>(b.data()), m_queries, m_keys);
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
    maps.labels = std::move(labels);
    for (int l = 0; l < a.layers(); ++l) maps.settings.push_back(a.layerSettings(l));
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

ImportedLayer importedLayer(const ImportedAttention& imported, int layer, const Limits& limits) {
    if (layer < 0 || layer >= imported.layers())
        throw InputError("layer", std::to_string(layer) + " is not a layer of " + clipPlace(imported.path(), 120) + " (0 … " +
                                      std::to_string(imported.layers() - 1) + ")");
    // What is copied and widened counts before it is allocated: the layer's copy, and one widened
    // map a core while the views of every layer sweep a file whose maps are not floats in place.
    const std::uint64_t mapFloats = static_cast<std::uint64_t>(imported.queries()) * static_cast<std::uint64_t>(imported.keys());
    const std::uint64_t copy = static_cast<std::uint64_t>(imported.heads()) * mapFloats * sizeof(float);
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
