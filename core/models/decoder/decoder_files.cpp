// A model folder's files, its shards, and the tensors taken from them (decoder_files.hpp).
#include "core/models/decoder/decoder_files.hpp"

#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>

namespace attnviz::core::decoder {

namespace {

namespace fs = std::filesystem;

bool isFile(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

// Why a file a folder must hold cannot be read: missing, or there but not a regular file (a pipe
// or a device, never opened: a pipe would wait for a writer).
std::string notAFile(const fs::path& p, const std::string& missing) {
    std::error_code ec;
    return fs::exists(p, ec) ? "is not a regular file (a pipe or a device cannot be read)" : missing;
}

constexpr std::size_t kMaxIndexBytes = 16ULL << 20;  // a 405 B model's index is about 2 MB
constexpr std::size_t kMaxShards = 4096;

// model.safetensors.index.json's weight_map: tensor name → shard file name (a plain name in the
// folder). Throws InputError naming the index and the entry.
std::map<std::string, std::string> readIndex(const std::string& path) {
    const std::string text = readTextFile(path, kMaxIndexBytes, "a safetensors index");
    const nlohmann::json j = parseJson(text, path, false);
    if (j.is_discarded()) throw InputError(path, "not valid JSON");
    if (!j.is_object()) throw InputError(path, "expected a JSON object, got " + describeJson(j));
    const auto map = j.find("weight_map");
    if (map == j.end()) throw InputError(path, "weight_map: missing (an index maps each tensor to its shard)");
    if (!map->is_object()) throw InputError(path + ": weight_map", "expected an object, got " + describeJson(*map));
    std::map<std::string, std::string> out;
    for (const auto& [name, file] : map->items()) {
        const std::string where = path + ": weight_map: " + clipText(name, 120);
        if (!file.is_string()) throw InputError(where, "expected a file name, got " + describeJson(file));
        const std::string shard = file.get<std::string>();
        const fs::path p(shard);
        if (shard.empty() || p.has_parent_path() || shard == "." || shard == "..")
            throw InputError(where, quoteValue(shard) + " is not a file name in the folder (an index names its shards beside it)");
        out.emplace(name, shard);
    }
    if (out.empty()) throw InputError(path + ": weight_map", "names no tensor");
    return out;
}

}  // namespace

std::string readConfigText(const std::string& path) { return readTextFile(path, kMaxConfigBytes, "a model's config.json"); }

int sizeField(const nlohmann::json& j, const char* key, long long max, const std::string& name, const std::string& who, bool required,
              int fallback) {
    const auto it = j.find(key);
    if (it == j.end() || (!required && it->is_null())) {
        if (required) throw InputError(name, std::string(key) + ": missing (" + who + " names it)");
        return fallback;
    }
    if (!it->is_number_integer()) throw InputError(name + ": " + key, "expected a whole number, got " + describeJson(*it));
    const auto value = it->get<long long>();
    if (value < 1 || value > max) throw InputError(name + ": " + key, std::to_string(value) + " is outside 1 … " + std::to_string(max));
    return static_cast<int>(value);
}

bool flagField(const nlohmann::json& j, const char* key, bool fallback, const std::string& name) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InputError(name + ": " + key, "expected true or false, got " + describeJson(*it));
    return it->get<bool>();
}

Activation activationField(const nlohmann::json& j, const char* key, Activation fallback, const std::string& name) {
    const auto act = j.find(key);
    if (act == j.end() || act->is_null()) return fallback;
    const std::string value = act->is_string() ? act->get<std::string>() : std::string();
    // gelu_new, gelu_fast and gelu_pytorch_tanh are one formula: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
    if (value == "gelu") return Activation::GeluErf;
    if (value == "gelu_new" || value == "gelu_fast" || value == "gelu_pytorch_tanh") return Activation::GeluTanh;
    if (value == "relu") return Activation::Relu;
    if (value == "silu" || value == "swish") return Activation::Silu;
    throw InputError(name + ": " + key, (act->is_string() ? quoteValue(value) : describeJson(*act)) +
                                            " is not one attnviz computes (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, silu)");
}

double numberField(const nlohmann::json& j, const char* key, double fallback, double low, double high, const std::string& name) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_number()) throw InputError(name + ": " + key, "expected a number, got " + describeJson(*it));
    const double value = it->get<double>();
    if (!(value > low && value < high))
        throw InputError(name + ": " + key, formatNumber(value) + " is outside " + formatNumber(low) + " … " + formatNumber(high));
    return value;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

ModelFiles locateFiles(const std::string& folderText, const std::string& family) {
    const fs::path folder(folderText);
    std::error_code ec;
    if (!fs::exists(folder, ec)) throw InputError(folderText, "no such folder");
    if (!fs::is_directory(folder, ec))
        throw InputError(folderText, "not a folder (a model is a folder holding config.json and model.safetensors)");
    ModelFiles out;
    const fs::path config = folder / "config.json", weights = folder / "model.safetensors", index = folder / "model.safetensors.index.json";
    if (!isFile(config)) throw InputError(config.string(), notAFile(config, "missing (" + family + " holds config.json)"));
    out.config = config.string();
    if (isFile(weights)) {
        out.weights = weights.string();
    } else if (isFile(index)) {
        out.weights = index.string();
        out.sharded = true;
    } else if (isFile(folder / "pytorch_model.bin") || isFile(folder / "pytorch_model.bin.index.json")) {
        throw InputError(weights.string(),
                         "missing: the folder holds only pytorch_model.bin, a Python pickle attnviz does not "
                         "read; save the model with safe_serialization=True to get model.safetensors");
    } else {
        throw InputError(
            weights.string(),
            notAFile(weights, "missing (" + family + " holds model.safetensors, or shards named by model.safetensors.index.json)"));
    }
    const fs::path vocab = folder / "vocab.json", merges = folder / "merges.txt", tokenizer = folder / "tokenizer.json",
                   wordVocab = folder / "vocab.txt", tokenizerConfig = folder / "tokenizer_config.json";
    // A tokenizer's file that is there but not a regular file is named as such, not as missing.
    for (const fs::path& p : {tokenizer, vocab, merges, wordVocab, tokenizerConfig}) {
        std::error_code ec;
        if (fs::exists(p, ec) && !isFile(p)) throw InputError(p.string(), notAFile(p, ""));
    }
    if (isFile(tokenizer)) out.tokenizerJson = tokenizer.string();
    if (isFile(vocab) && isFile(merges)) {
        out.vocab = vocab.string();
        out.merges = merges.string();
    }
    if (isFile(wordVocab)) out.wordVocab = wordVocab.string();
    if (isFile(tokenizerConfig)) out.tokenizerConfig = tokenizerConfig.string();
    if (out.tokenizerJson.empty() && out.vocab.empty() && out.wordVocab.empty())
        throw InputError(folderText, "no tokenizer: expected tokenizer.json, vocab.json and merges.txt, or vocab.txt");
    return out;
}

Tensors::Tensors(const ModelFiles& files, Checkpoint::Parts& parts, Progress* progress) : m_parts(parts), m_progress(progress) {
    std::vector<std::string> paths;
    std::map<std::string, std::string> index;
    if (files.sharded) {
        index = readIndex(files.weights);
        std::map<std::string, bool> shards;
        for (const auto& entry : index) shards.emplace(entry.second, true);
        if (shards.size() > kMaxShards)
            throw InputError(files.weights, std::to_string(shards.size()) + " shards are more than " + std::to_string(kMaxShards));
        const fs::path folder = fs::path(files.weights).parent_path();
        for (const auto& shard : shards) {
            const fs::path p = folder / shard.first;
            if (!isFile(p))
                throw InputError(p.string(), notAFile(p, "missing (" + fs::path(files.weights).filename().string() + " names it)"));
            paths.push_back(p.string());
        }
    } else {
        paths.push_back(files.weights);
    }
    std::uint64_t bytes = 0;
    for (const std::string& path : paths) {
        parts.files.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path, progress)));
        const SafetensorsFile& file = *parts.files.back();
        for (const TensorInfo& t : file.tensors()) {
            bytes += t.end - t.begin;
            const auto [it, added] = m_byName.emplace(t.name, Found{&file, &t});
            if (!added)
                throw InputError(
                    file.path() + ": " + clipText(t.name, 200),
                    "also in " + fs::path(it->second.file->path()).filename().string() + ": a tensor must be in one shard only");
        }
    }
    for (const auto& [name, shard] : index) {
        const auto it = m_byName.find(name);
        if (it == m_byName.end())
            throw InputError(files.weights + ": weight_map: " + clipText(name, 200), "not in " + shard + ", which the index names for it");
        if (fs::path(it->second.file->path()).filename() != shard)
            throw InputError(
                files.weights + ": weight_map: " + clipText(name, 200),
                "the index names " + shard + ", but the tensor is in " + fs::path(it->second.file->path()).filename().string());
    }
    expect(progress, bytes);
}

void nameFolder(Checkpoint::Parts& parts, const ModelFiles& files) {
    const fs::path folder = fs::path(files.config).parent_path();
    parts.folder = folder.string();
    parts.name = folder.filename().string();
    if (parts.name.empty()) parts.name = fs::absolute(folder).filename().string();
}

namespace {

// "<layers>12.mlp.up_proj.weight" → 12; -1 for names outside the layers.
int layerOf(std::string_view name, const std::string& layers) {
    if (name.substr(0, layers.size()) != layers) return -1;
    name.remove_prefix(layers.size());
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return -1;
    int layer = -1;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, layer);
    return ec == std::errc() && end == name.data() + dot ? layer : -1;
}

}  // namespace

void refuseLayersBeyond(const Tensors& tensors, const std::string& layers, int count, const std::string& field) {
    for (const auto& [name, found] : tensors.all())
        if (const int layer = layerOf(name, layers); layer >= count)
            throw InputError(found.file->path() + ": " + name,
                             "layer " + std::to_string(layer) + " is beyond config.json's " + field + " " + std::to_string(count));
}

std::shared_ptr<const Checkpoint> openTokenizerJsonFolder(const std::string& folder, const std::string& kind,
                                                          Config (*parse)(std::string_view, const std::string&),
                                                          void (*load)(Checkpoint::Parts&, const Tensors&), Progress* progress) {
    const ModelFiles files = locateFiles(folder, kind);
    Checkpoint::Parts c;
    nameFolder(c, files);
    c.config = parse(readConfigText(files.config), files.config);
    if (files.tokenizerJson.empty())
        throw InputError((std::filesystem::path(c.folder) / "tokenizer.json").string(),
                         "missing (a " + c.config.family + " folder's tokenizer is tokenizer.json)");
    c.tokenizer = std::make_unique<ModelTokenizer>(ByteBpe::fromTokenizerJson(files.tokenizerJson));
    const Tensors tensors(files, c, progress);
    load(c, tensors);
    complete(progress);  // tensors not taken (rotary buffers, a vision tower) count as read
    return std::make_shared<const Checkpoint>(std::move(c));
}

void takeLmHead(Checkpoint::Parts& c, const Tensors& tensors, const std::string& name) {
    const Config& cfg = c.config;
    const Tensors::Found head = tensors.find(name);
    if (!cfg.tieWordEmbeddings && !head)
        throw InputError(c.files.front()->path() + ": " + name, "missing, and config.json says tie_word_embeddings is false");
    if (!cfg.tieWordEmbeddings) c.lmHead = tensors.take(head, {cfg.vocabSize, cfg.nEmbd}, Tensors::Use::Rows);
    // Special tokens past the embeddings' rows are kept (Gemma 3's <image_soft_token>, which the
    // image-text model replaces before the embeddings; written in a text, checkIds refuses it).
    for (int id = cfg.vocabSize; id < c.tokenizer->vocabSize(); ++id)
        if (c.tokenizer->hasId(id) && !c.tokenizer->isSpecial(id))
            throw InputError(c.folder, "the tokenizer has " + std::to_string(c.tokenizer->vocabSize()) +
                                           " tokens, more than config.json's vocab_size " + std::to_string(cfg.vocabSize));
}

Tensors::Found Tensors::find(const std::string& name) const {
    const auto it = m_byName.find(name);
    return it == m_byName.end() ? Found{} : it->second;
}

Weight Tensors::take(const std::string& name, const std::vector<std::int64_t>& shape, Use use, const std::string& why) const {
    const Found found = find(name);
    if (!found) throw InputError(m_parts.files.front()->path() + ": " + name, "missing (" + why + ")");
    return take(found, shape, use);
}

Weight Tensors::take(const Found& found, const std::vector<std::int64_t>& shape, Use use) const {
    return takeRows(found, shape, 0, shape.empty() ? 1 : shape[0], use);
}

Weight Tensors::takeRows(const Found& found, const std::vector<std::int64_t>& shape, std::int64_t first, std::int64_t count,
                         Use use) const {
    const SafetensorsFile& file = *found.file;
    const TensorInfo& t = *found.tensor;
    if (!isFloatDType(t.dtype))
        throw InputError(file.path() + ": " + t.name, std::string("dtype ") + dtypeName(t.dtype) + " is not a float type");
    if (t.shape != shape)
        throw InputError(file.path() + ": " + t.name,
                         "shape " + shapeText(t.shape) + " disagrees with config.json (expected " + shapeText(shape) + ")");
    Weight w;
    w.name = t.name;
    w.file = file.path();
    w.type = t.dtype == DType::F16 ? WeightType::F16 : t.dtype == DType::BF16 ? WeightType::BF16 : WeightType::F32;
    const bool transposed = use == Use::ProductTransposed;
    // A matrix's rows [first, first + count), or a vector's elements.
    const bool matrix = shape.size() == 2;
    const Eigen::Index whole0 = shape.empty() ? 1 : shape[0], width = matrix ? shape[1] : 1;
    if (first < 0 || count < 1 || first + count > whole0) throw std::invalid_argument("takeRows: rows outside the tensor");
    const Eigen::Index stored0 = matrix ? count : 1, stored1 = matrix ? width : count, offset = first * width;
    w.transposed = transposed;
    w.rows = transposed ? stored1 : stored0;
    w.cols = transposed ? stored0 : stored1;
    if (t.dtype == DType::F64) {
        // Widened once to F32 (no kernel reads doubles); rare in checkpoints.
        auto& copy = m_parts.converted.emplace_back(static_cast<std::size_t>(whole0 * width));
        file.toFloats(t, copy.data());
        w.type = WeightType::F32;
        w.source = copy.data() + offset;
    } else {
        const std::size_t element = w.type == WeightType::F32 ? 4 : 2;
        w.source = file.bytes(t).data() + static_cast<std::size_t>(offset) * element;
    }
    switch (use) {
        case Use::Vector:
            // Gains and biases as floats: in place when the file holds aligned F32, else widened.
            if (const float* inPlace = file.floatsInPlace(t)) {
                w.data = inPlace + offset;
            } else {
                auto& copy = m_parts.converted.emplace_back(static_cast<std::size_t>(stored0 * stored1));
                widenRow(w.source, w.type, stored0 * stored1, 0, copy.data());
                w.data = copy.data();
            }
            break;
        case Use::Product:
        case Use::ProductTransposed:
            // Packed in the file's type; the products read the panels only, so the mapped pages
            // can go (they are read from the file again if the layer is shown as a scenario).
            file.populate(t);
            packWeights(w.source, w.type, w.rows, w.cols, transposed, w.packed);
            file.release(t);
            break;
        case Use::Rows: break;  // read where they lie, a row at a time
    }
    advance(m_progress, (t.end - t.begin) / static_cast<std::uint64_t>(whole0) * static_cast<std::uint64_t>(count));  // a part's share
    return w;
}

}  // namespace attnviz::core::decoder
