// Attention computed elsewhere (a transformers pass with output_attentions=True, another tool),
// read from a file that is mapped, never read whole:
//   * a .npy file ('<f4' or '<f2', C order) of [layers, heads, T_q, T_k], [heads, T_q, T_k] (one
//     layer) or [T_q, T_k] (one head);
//   * a safetensors file (F32 or F16) holding `attentions` [layers, heads, T_q, T_k] (or
//     [layers, 1, heads, T_q, T_k]: a batch of one), or one tensor a layer, layer.0 … layer.{L-1},
//     each [heads, T_q, T_k] or [1, heads, T_q, T_k]: transformers' tuple, one entry a layer.
//   * a safetensors file of queries and keys (scripts/export_attention.py --qk): layer.N.q
//     [heads, T, d_h] and layer.N.k [kv_heads, T, d_h] (or with a batch of one first), BF16, F16
//     or F32, as the scores see them (after biases, norms and RoPE), and in __metadata__ "format":
//     "attnviz-qk", "scaling" (the scores' factor, 1/√d_h for most models), "causal" ("true" or
//     "false", default true) and "sliding_windows" (one number a layer, 0 for none; default none).
//     Every map is made on demand, A = softmax(scaling · q kᵀ) under the mask, each query's
//     log-sum-exp computed the first time its rows are read: nothing of size T × T is kept.
// Queries are the first T_q keys (T_q <= T_k). Tokens come from tokens.txt beside the file (one a
// line), or the file the options name, or are the positions 0 … T_k - 1.
//
// open() checks the structure (format, dtype, shape, sizes, names, tokens) from the header
// alone. The values are checked per map, once each, by check*() before anything reads them: every
// weight finite and >= 0 (-0 allowed), every row summing to 1 within 1e-3 and the rounding its
// values show (float16, or float32 values that are all bfloat16) or all zero (a fully masked row),
// and some weight in every map (a map of zeros is a file never filled); of queries and keys, every
// value finite. Every problem is an InputError naming the file and the first bad place.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"
#include "core/scenario/model.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace attnviz::core {

class MappedFile;

enum class MapDType : std::uint8_t { F32, F16, BF16 };  // BF16: queries and keys only

struct ImportOptions {
    std::string tokensFile;  // "": tokens.txt beside the file when there is one, else positions
};

// How far a row's sum may be from 1: 1e-3 for the computation, plus the rounding of each weight
// to the precision it has (relative 2^-p for p bits of significand): 2^-11 for float16, whose
// subnormals add up to half their spacing (2^-25) a key, and 2^-8 for float32 values that are all
// bfloat16 widened (what numpy gets from a BF16 model's maps).
inline constexpr double kRowSumTolerance = 1e-3;
double rowSumTolerance(MapDType dtype, bool bfloat16Values, Eigen::Index keys);

class ImportedAttention {
public:
    // Maps `path` and checks its structure and its tokens; reads the header's pages and the
    // tokens file only. Throws InputError(path or the tokens file, problem).
    static std::shared_ptr<const ImportedAttention> open(const std::string& path, const ImportOptions& options = {},
                                                         const Limits& limits = {});
    // The same over a file's bytes already in memory (tests and the fuzz target), which must
    // outlive the object; `name` stands for the file in messages. `labels`: the tokens, or empty
    // for positions.
    static std::shared_ptr<const ImportedAttention> fromBytes(std::span<const std::byte> bytes, const std::string& name,
                                                              std::vector<std::string> labels = {}, const Limits& limits = {});

    ImportedAttention(const ImportedAttention&) = delete;
    ImportedAttention& operator=(const ImportedAttention&) = delete;
    ~ImportedAttention();

    const std::string& path() const { return m_path; }
    const std::string& tokensPath() const { return m_tokensPath; }  // "" when the labels are positions
    // The options it was opened with ("" for tokens.txt beside it, found or not): the same file
    // opened again with the same options is this object.
    const ImportOptions& options() const { return m_options; }
    int layers() const { return m_layers; }
    int heads() const { return m_heads; }
    Eigen::Index queries() const { return m_queries; }
    Eigen::Index keys() const { return m_keys; }
    MapDType dtype() const { return m_dtype; }
    // [T_k]: the tokens file's lines, or "0" … "T_k - 1".
    const std::vector<std::string>& labels() const { return m_labels; }
    bool positionsOnly() const { return m_tokensPath.empty(); }
    // "attentions.npy · 12 layers × 12 heads · T = 64 · float32"
    std::string describe() const;
    // A file of queries and keys: every map made on demand from them.
    bool queriesAndKeys() const { return m_qk != nullptr; }
    // Of queries and keys: the key/value head query head `head` reads, and the heads' width.
    int kvHeadOf(int head) const;
    int headWidth() const;
    float softcap() const;  // a file of queries and keys: the cap of its scaled scores (0: none)
    // Of queries and keys: rows [r0, r0 + n) of the map of (layer, head) made a tile of keys at a
    // time into `sink` (TileSink's order), keys [k0, k1) asked for (−1: to the end); the rows'
    // log-sum-exp is computed the first time they are read, and kept. Precondition: checked.
    void weightTiles(int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1, TileSink& sink) const;

    // The value checks of the maps in `maps` ((layer, head) pairs) not checked yet, in parallel,
    // each map's pages read then given back. Throws InputError(path, "layer 3 · head 5 · row 17 ·
    // key 4: …") for the first bad map in (layer, head) order, or Cancelled once `progress` was
    // stopped. Progress counts maps.
    void check(std::span<const std::pair<int, int>> maps, Progress* progress = nullptr) const;
    void checkLayer(int layer, Progress* progress = nullptr) const;
    void checkAll(Progress* progress = nullptr) const;
    bool checked(int layer, int head) const;
    bool checkedAll() const { return m_checkedCount.load() == static_cast<long long>(m_layers) * m_heads; }
    // checkAll on a worker thread (the window checks the shown layer at once and the rest while
    // it is looked at); nothing when one was started already. Stopped and joined when the
    // object dies. checkStatus says how far it is, and the first bad map's message if any.
    void checkAllInBackground() const;
    struct CheckStatus {
        bool running = false;
        double fraction = 0;  // of the maps, 0 … 1
        std::string error;    // "" unless the background check found a bad map, or the file changed
    };
    CheckStatus checkStatus() const;
    // The layer's mask as found by the checks (the layer must be checked): causal when every map
    // is zero above the diagonal (never when T_q != T_k).
    Settings layerSettings(int layer) const;

    // One map, float32 [T_q, T_k] row-major. F32 whose first byte is aligned for a float: a view
    // of the mapped pages (no copy). F16, or F32 not aligned: widened into `scratch`, the view is
    // of scratch. Precondition: checked(layer, head).
    MatRef weights(int layer, int head, std::vector<float>& scratch) const;
    // The map widened to float32 into `out` (T_q × T_k floats, row-major).
    void copyWeights(int layer, int head, float* out) const;
    // Whether reading a map as floats needs a widened copy of it (F16, or F32 not aligned).
    bool widens() const;
    // The map's bytes as the file holds them ([T_q, T_k] in the file's dtype); not of queries
    // and keys.
    std::span<const std::byte> mapBytes(int layer, int head) const;
    // Gives the map's pages back to the system (read from the file again if read again). Advice
    // only; nothing for fromBytes.
    void release(int layer, int head) const;
    // The file changed while mapped (core/base/mapped_file.hpp): throws InputError(path,
    // "changed while it was read; open it again"). Never for fromBytes. changed() asks without
    // throwing; checkStatus() then gives that message as its error.
    void checkUnchanged() const;
    bool changed() const;

private:
    ImportedAttention() = default;
    void parse();
    void parseNpy();
    void parseSafetensors();
    void parseQueriesKeys(const class SafetensorsFile& file);
    std::string checkQueriesKeys(int layer, int head) const;  // "" or the first value not finite
    void setLabels(std::vector<std::string> labels, const std::string& tokensPath, const Limits& limits);
    std::string checkMap(int layer, int head) const;  // "" or the first problem, with its place

    std::string m_path, m_tokensPath;
    ImportOptions m_options;
    std::unique_ptr<MappedFile> m_mapping;   // null for fromBytes
    std::span<const std::byte> m_bytes;      // the whole file
    std::vector<std::size_t> m_layerOffset;  // each layer's first byte in m_bytes
    int m_layers = 0, m_heads = 0;
    Eigen::Index m_queries = 0, m_keys = 0;
    MapDType m_dtype = MapDType::F32;
    std::vector<std::string> m_labels;
    // Per map: kChecked once its values passed, kUpperZero when it is zero above the diagonal.
    static constexpr std::uint8_t kChecked = 1, kUpperZero = 2;
    std::unique_ptr<std::atomic<std::uint8_t>[]> m_state;
    mutable std::atomic<long long> m_checkedCount{0};
    struct Background;
    struct QueriesKeys;
    std::unique_ptr<QueriesKeys> m_qk;                 // null: a file of maps
    mutable std::unique_ptr<Background> m_background;  // last: stopped before the rest goes
};

// The maps as the views of many heads read them (the model view, statistics, rollout), with
// `labels` as drawn (visibleToken). F32 in place; F16 widened one map at a time into a slot shared
// by its readers, freed when the last of them calls done (or when the maps die). done also gives
// a map's pages back, so that a sweep over a large file never holds much of it. The maps read must
// be checked (checkAll, or check of those read). Keeps `imported` alive.
AttentionMaps importedMaps(std::shared_ptr<const ImportedAttention> imported, std::vector<std::string> labels);

// The layer as the single-head views and exports read a scenario's: a Model of the tokens and
// `heads` (no X, no weights: dk = dv = 0), a Forward whose heads hold only `weights` (a copy:
// heads × T_q × T_k floats, widened straight into place), and the layer's settings. Checks the
// layer first. Throws InputError("--max-memory", …) before anything is allocated when the copy,
// with one widened map a core for the views of every layer when the file's maps need widening,
// would pass limits.maxBytes. Of queries and keys, the maps are made whole only while they take
// at most limits.shownLayerBytes and fit limits.maxBytes (layerMadeWhole); else the heads hold no
// weights and the views read the layer from the file, made on demand (whole false).
struct ImportedLayer {
    Model model;
    Forward forward;
    Settings settings;
    bool whole = true;
};
bool layerMadeWhole(const ImportedAttention& imported, const Limits& limits);
// Bytes of one layer's every map as float32: heads × T_q × T_k × 4 (what importedLayer copies).
std::uint64_t layerMapBytes(const ImportedAttention& imported);
ImportedLayer importedLayer(const ImportedAttention& imported, int layer, const Limits& limits = {});

}  // namespace attnviz::core
