// Opening a GPT-2 folder: the config, the tokenizer, and every tensor checked against the
// config's shapes, mapped (F32) or converted once (F16, BF16), and packed for the kernels.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/gpt2/gpt2.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>

namespace attnviz::core::gpt2 {

namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

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

// "h.12.attn.c_attn.weight" → 12 and "attn.c_attn.weight"; false for other names.
bool splitLayer(std::string_view name, int& layer, std::string_view& rest) {
    if (name.substr(0, 2) != "h.") return false;
    name.remove_prefix(2);
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return false;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, layer);
    if (ec != std::errc() || end != name.data() + dot) return false;
    rest = name.substr(dot + 1);
    return true;
}

}  // namespace

struct Checkpoint::Private {
    // Resolves one tensor: `name` with or without the "transformer." prefix, a float dtype, the
    // given shape ({n} for a vector), its floats in place or converted.
    static Weight take(Checkpoint& c, const std::string& name, std::vector<std::int64_t> shape, bool pack, Progress* progress) {
        const SafetensorsFile& file = *c.m_file;
        const TensorInfo* t = file.find("transformer." + name);
        if (!t) t = file.find(name);
        if (!t)
            throw InputError(file.path() + ": " + name, "missing (a GPT-2 checkpoint of " + std::to_string(c.m_config.nLayer) +
                                                            " layers holds it, with or without the \"transformer.\" prefix)");
        if (!isFloatDType(t->dtype))
            throw InputError(file.path() + ": " + t->name, std::string("dtype ") + dtypeName(t->dtype) + " is not a float type");
        if (t->shape != shape)
            throw InputError(file.path() + ": " + t->name,
                             "shape " + shapeText(t->shape) + " disagrees with config.json (expected " + shapeText(shape) + ")");
        Weight w;
        w.name = t->name;
        w.rows = shape.size() == 2 ? shape[0] : 1;
        file.populate(*t);
        w.cols = shape.back();
        if (const float* in = file.floatsInPlace(*t)) {
            w.data = in;
        } else {
            auto& copy = c.m_converted.emplace_back(static_cast<std::size_t>(w.rows * w.cols));
            file.toFloats(*t, copy.data());
            w.data = copy.data();
        }
        if (pack) {
            packColumns(w.map(), w.packed);
            // The products read the packed copy (and the file only for the last cols % 16
            // columns, or a layer's weights when it is shown): the mapped pages can go.
            if (w.data == file.floatsInPlace(*t)) file.release(*t);
        }
        advance(progress, t->end - t->begin);
        return w;
    }

    // A tensor of a layer beyond n_layer means the config and the weights disagree.
    static void checkLayers(const Checkpoint& c) {
        for (const TensorInfo& t : c.m_file->tensors()) {
            std::string_view name = t.name, rest;
            if (name.substr(0, 12) == "transformer.") name.remove_prefix(12);
            int layer = 0;
            if (splitLayer(name, layer, rest) && (layer < 0 || layer >= c.m_config.nLayer))
                throw InputError(c.m_file->path() + ": " + t.name, "layer " + std::to_string(layer) + " is beyond config.json's n_layer " +
                                                                       std::to_string(c.m_config.nLayer));
        }
    }

    static void load(Checkpoint& c, Progress* progress) {
        const Config& cfg = c.m_config;
        const std::int64_t d = cfg.nEmbd, inner = cfg.nInner;
        checkLayers(c);
        std::uint64_t bytes = 0;
        for (const TensorInfo& t : c.m_file->tensors()) bytes += t.end - t.begin;
        expect(progress, bytes);
        c.m_wte = take(c, "wte.weight", {cfg.vocabSize, d}, false, progress);
        c.m_wpe = take(c, "wpe.weight", {cfg.nPositions, d}, false, progress);
        c.m_blocks.resize(static_cast<std::size_t>(cfg.nLayer));
        for (int l = 0; l < cfg.nLayer; ++l) {
            const std::string p = "h." + std::to_string(l) + ".";
            Block& b = c.m_blocks[static_cast<std::size_t>(l)];
            b.ln1Gain = take(c, p + "ln_1.weight", {d}, false, progress);
            b.ln1Bias = take(c, p + "ln_1.bias", {d}, false, progress);
            b.attnW = take(c, p + "attn.c_attn.weight", {d, 3 * d}, true, progress);
            b.attnBias = take(c, p + "attn.c_attn.bias", {3 * d}, false, progress);
            b.projW = take(c, p + "attn.c_proj.weight", {d, d}, true, progress);
            b.projBias = take(c, p + "attn.c_proj.bias", {d}, false, progress);
            b.ln2Gain = take(c, p + "ln_2.weight", {d}, false, progress);
            b.ln2Bias = take(c, p + "ln_2.bias", {d}, false, progress);
            b.fcW = take(c, p + "mlp.c_fc.weight", {d, inner}, true, progress);
            b.fcBias = take(c, p + "mlp.c_fc.bias", {inner}, false, progress);
            b.fcProjW = take(c, p + "mlp.c_proj.weight", {inner, d}, true, progress);
            b.fcProjBias = take(c, p + "mlp.c_proj.bias", {d}, false, progress);
        }
        c.m_lnfGain = take(c, "ln_f.weight", {d}, false, progress);
        c.m_lnfBias = take(c, "ln_f.bias", {d}, false, progress);
        c.m_tied = cfg.tieWordEmbeddings || !c.m_file->find("lm_head.weight");
        if (!cfg.tieWordEmbeddings && c.m_tied)
            throw InputError(c.m_file->path() + ": lm_head.weight", "missing, and config.json says tie_word_embeddings is false");
        // lm_head.weight is read by name only: "transformer.lm_head.weight" is not Hugging Face's name.
        if (!c.m_tied) c.m_lmHead = take(c, "lm_head.weight", {cfg.vocabSize, d}, false, progress);
        if (c.m_tokenizer->vocabSize() > cfg.vocabSize)
            throw InputError(c.m_folder, "the tokenizer has " + std::to_string(c.m_tokenizer->vocabSize()) +
                                             " tokens, more than config.json's vocab_size " + std::to_string(cfg.vocabSize));
    }
};

Checkpoint::Checkpoint() = default;
Checkpoint::~Checkpoint() = default;

std::uint64_t Checkpoint::fileBytes() const { return m_file->fileBytes(); }

void Checkpoint::checkUnchanged() const { m_file->checkUnchanged(); }
bool Checkpoint::changed() const { return m_file->changed(); }

std::vector<const Weight*> Checkpoint::weights() const {
    std::vector<const Weight*> out = {&m_wte, &m_wpe};
    for (const Block& b : m_blocks)
        for (const Weight* w : {&b.ln1Gain, &b.ln1Bias, &b.attnW, &b.attnBias, &b.projW, &b.projBias, &b.ln2Gain, &b.ln2Bias, &b.fcW,
                                &b.fcBias, &b.fcProjW, &b.fcProjBias})
            out.push_back(w);
    for (const Weight* w : {&m_lnfGain, &m_lnfBias}) out.push_back(w);
    if (!m_tied) out.push_back(&m_lmHead);
    return out;
}

void Checkpoint::explainNonFinite(const std::string& where, const std::string& problem) const {
    checkUnchanged();
    for (const Weight* w : weights()) {
        const auto n = static_cast<std::size_t>(w->rows * w->cols);
        const float* first = std::find_if(w->data, w->data + n, [](float v) { return !std::isfinite(v); });
        if (first == w->data + n) continue;
        const auto at = static_cast<Eigen::Index>(first - w->data);
        const std::string index =
            w->rows > 1 ? "[" + std::to_string(at / w->cols) + ", " + std::to_string(at % w->cols) + "]" : "[" + std::to_string(at) + "]";
        const char* kind = std::isnan(*first) ? "NaN" : (*first > 0 ? "+inf" : "-inf");
        throw InputError(m_file->path() + ": " + w->name, std::string("holds ") + kind + " at " + index +
                                                              ": the checkpoint's weights must be finite (is the file damaged?)");
    }
    checkUnchanged();
    throw InputError(where, problem);
}

std::shared_ptr<const Checkpoint> Checkpoint::openFiles(const std::string& configPath, const std::string& weightsPath,
                                                        const std::string& vocabPath, const std::string& mergesPath, Progress* progress) {
    auto c = std::make_shared<Checkpoint>();
    const fs::path folder = fs::path(weightsPath).parent_path();
    c->m_folder = folder.string();
    c->m_name = folder.filename().string();
    if (c->m_name.empty()) c->m_name = fs::absolute(folder).filename().string();
    c->m_config = parseConfig(readTextFile(configPath), configPath);
    c->m_tokenizer =
        std::make_unique<ByteBpe>(mergesPath.empty() ? ByteBpe::fromTokenizerJson(vocabPath) : ByteBpe::fromFiles(vocabPath, mergesPath));
    c->m_file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(weightsPath, progress));
    Private::load(*c, progress);
    complete(progress);  // the tensors not taken (buffers such as attn.bias) count as read
    return c;
}

ModelFiles locateFiles(const std::string& folderText) {
    const fs::path folder(folderText);
    std::error_code ec;
    if (!fs::exists(folder, ec)) throw InputError(folderText, "no such folder");
    if (!fs::is_directory(folder, ec))
        throw InputError(folderText, "not a folder (a model is a folder holding config.json and model.safetensors)");
    const fs::path config = folder / "config.json", weights = folder / "model.safetensors";
    if (!isFile(config)) throw InputError(config.string(), notAFile(config, "missing (a Hugging Face GPT-2 folder holds config.json)"));
    if (!isFile(weights)) {
        if (isFile(folder / "pytorch_model.bin"))
            throw InputError(weights.string(),
                             "missing: the folder holds only pytorch_model.bin, a Python pickle attnviz does not "
                             "read; save the model with safe_serialization=True to get model.safetensors");
        throw InputError(weights.string(), notAFile(weights, "missing (a Hugging Face GPT-2 folder holds model.safetensors)"));
    }
    const fs::path vocab = folder / "vocab.json", merges = folder / "merges.txt", tokenizer = folder / "tokenizer.json";
    if (isFile(vocab) && isFile(merges)) return {config.string(), weights.string(), vocab.string(), merges.string()};
    if (isFile(tokenizer)) return {config.string(), weights.string(), tokenizer.string(), ""};
    throw InputError(folderText, "no tokenizer: expected vocab.json and merges.txt, or tokenizer.json");
}

std::shared_ptr<const Checkpoint> Checkpoint::open(const std::string& folder, Progress* progress) {
    const ModelFiles files = locateFiles(folder);
    return openFiles(files.config, files.weights, files.vocab, files.merges, progress);
}

}  // namespace attnviz::core::gpt2
