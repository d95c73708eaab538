#include "core/io/export.hpp"

#include "core/attention/qk_tiles.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/base/utf8.hpp"
#include "core/io/imported_attention.hpp"
#include "core/io/npy.hpp"
#include "core/models/run_maps.hpp"
#include "core/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace attnviz::core {
namespace {

// The text files and the CSV hold labels as they are drawn: valid UTF-8, a byte that is not part
// of a whole character as U+FFFD, as in the JSON.
std::string csvField(const std::string& label) {
    std::string text = sanitizeUtf8(label);
    if (text.find_first_of(",\"\r\n") == std::string::npos && !text.empty() && text.front() != ' ' && text.back() != ' ') return text;
    std::string out(1, '"');
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string labelsText(const std::vector<std::string>& labels) {
    std::string out;
    for (const auto& l : labels) {
        for (char c : sanitizeUtf8(l)) out += (c == '\n' ? ' ' : c);
        out += '\n';
    }
    return out;
}

void writePretty(const nlohmann::json& j, int depth, std::string& out) {
    const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
    const std::string closePad(static_cast<std::size_t>(2 * depth), ' ');
    if (j.is_object() && !j.empty()) {
        out += "{\n";
        std::size_t n = 0;
        for (const auto& item : j.items()) {
            out += pad + jsonString(item.key()) + ": ";
            writePretty(item.value(), depth + 1, out);
            out += ++n < j.size() ? ",\n" : "\n";
        }
        out += closePad + "}";
        return;
    }
    const bool flat = j.is_array() && std::none_of(j.begin(), j.end(), [](const nlohmann::json& v) { return v.is_structured(); });
    if (!j.is_array() || flat) {
        out += dumpJson(j);
        return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
        out += pad;
        writePretty(j[i], depth + 1, out);
        out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closePad + "]";
}

}  // namespace

std::string prettyJson(const nlohmann::json& j) {
    std::string out;
    writePretty(j, 0, out);
    out += "\n";
    return out;
}

namespace {

// The export's JSON text, a piece at a time: flushed to the sink whenever it holds a megabyte.
class JsonStream {
public:
    explicit JsonStream(ByteSink& sink) : m_sink(sink) {}
    ~JsonStream() = default;
    JsonStream(const JsonStream&) = delete;
    JsonStream& operator=(const JsonStream&) = delete;

    JsonStream& operator<<(std::string_view text) {
        m_buffer.append(text);
        if (m_buffer.size() >= (std::size_t{1} << 20)) flush();
        return *this;
    }
    void number(float v) {
        if (!std::isfinite(v)) {
            *this << "null";
            return;
        }
        char digits[32];
        auto r = std::to_chars(digits, digits + sizeof digits, v);
        // a whole number keeps a ".0", so that it reads back as a float (numpy: float64, not int)
        if (std::find_if(digits, r.ptr, [](char c) { return c == '.' || c == 'e'; }) == r.ptr) *r.ptr++ = '.', *r.ptr++ = '0';
        *this << std::string_view(digits, static_cast<std::size_t>(r.ptr - digits));
    }
    void strings(const std::vector<std::string>& list) {
        *this << "[";
        for (std::size_t i = 0; i < list.size(); ++i) *this << (i ? "," : "") << jsonString(list[i]);
        *this << "]";
    }
    // rows one a line at `depth` (the layout prettyJson gives a matrix)
    void matrix(const Mat& m, int depth) {
        if (m.rows() == 0) {
            *this << "[]";
            return;
        }
        const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
        *this << "[\n";
        for (Eigen::Index i = 0; i < m.rows(); ++i) {
            *this << pad << "[";
            for (Eigen::Index j = 0; j < m.cols(); ++j) {
                if (j) *this << ",";
                number(m(i, j));
            }
            *this << (i + 1 < m.rows() ? "],\n" : "]\n");
        }
        *this << std::string(static_cast<std::size_t>(2 * depth), ' ') << "]";
    }
    void flush() {
        m_sink.write(m_buffer);
        m_buffer.clear();
    }

private:
    ByteSink& m_sink;
    std::string m_buffer;
};

// ",\n  "rollout": {…}" when there is one (RolloutExport).
void writeRollout(JsonStream& j, const RolloutExport* rollout) {
    if (rollout == nullptr) return;
    j << ",\n  \"rollout\": {\"layer\": " << std::to_string(rollout->layer) << ", \"heads\": \"" << rolloutHeadsName(rollout->options.heads)
      << "\", \"skip_first_key\": " << (rollout->options.skipFirstKey ? "true" : "false")
      << ",\n    \"rule\": " << jsonString(rolloutRule(rollout->options)) << ",\n    \"matrix\": ";
    j.matrix(rollout->matrix, 2);
    j << "}";
}

}  // namespace

void writeExportJson(ByteSink& out, const Model& model, const Forward& forward, const RolloutExport* rollout) {
    JsonStream j(out);
    j << "{\n  \"X\": ";
    if (model.explicitQkv) j << "null";
    else j.matrix(model.x, 1);
    j << ",\n  \"heads\": [";
    for (std::size_t h = 0; h < forward.heads.size(); ++h) {
        const HeadTensors& t = forward.heads[h];
        j << (h ? ",\n    {\n" : "\n    {\n");
        const std::pair<const char*, const Mat*> members[] = {{"K", &t.k},           {"Q", &t.q},           {"V", &t.v},
                                                              {"output", &t.output}, {"scores", &t.scores}, {"weights", &t.weights}};
        for (std::size_t m = 0; m < std::size(members); ++m) {
            j << "      \"" << members[m].first << "\": ";
            j.matrix(*members[m].second, 3);
            j << (m + 1 < std::size(members) ? ",\n" : "");
        }
        // What a variant adds: the key/value head this query head read, ALiBi's slope.
        if (model.kvHeads > 0) j << ",\n      \"kv_head\": " << std::to_string(model.kvHeadOf(static_cast<int>(h)));
        if (!model.alibiSlopes.empty()) j << ",\n      \"alibi_slope\": " << dumpJson(shortestDouble(t.alibiSlope));
        j << "\n    }";
    }
    j << (forward.heads.empty() ? "],\n" : "\n  ],\n");
    j << "  \"key_tokens\": ";
    j.strings(model.keyTokens);
    j << ",\n  \"output\": ";
    j.matrix(forward.output, 1);
    writeRollout(j, rollout);
    j << ",\n  \"tokens\": ";
    j.strings(model.queryTokens);
    j << "\n}\n";
    j.flush();
}

namespace {

// The files each kind of .npy export writes: the other kind's are removed from a folder reused.
constexpr const char* kScenarioNpyFiles[] = {"X.npy",      "Q.npy",          "K.npy",           "V.npy",
                                             "scores.npy", "weights.npy",    "head_output.npy", "output.npy",
                                             "tokens.txt", "key_tokens.txt", "kv_head.npy",     "alibi_slopes.npy"};
constexpr const char* kModelNpyFiles[] = {"attentions.npy", "token_ids.npy", "next_tokens.txt"};

}  // namespace

namespace {

// rollout.npy, or its removal from a folder reused without it.
void writeRolloutNpy(FileBatch& batch, const std::string& path, const RolloutExport* rollout) {
    if (rollout == nullptr) {
        batch.removeOnCommit(path);
        return;
    }
    ByteSink& sink = batch.open(path);
    sink.write(npyHeader({rollout->matrix.rows(), rollout->matrix.cols()}));
    sink.write(std::string_view(reinterpret_cast<const char*>(rollout->matrix.data()),
                                static_cast<std::size_t>(rollout->matrix.size()) * sizeof(float)));
}

}  // namespace

void exportNpyDir(FileBatch& batch, const std::string& dir, const Model& model, const Forward& forward, const RolloutExport* rollout) {
    namespace fs = std::filesystem;
    batch.makeFolder(dir);
    const auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
    for (const char* name : kModelNpyFiles) batch.removeOnCommit(path(name));
    // Each file is its header and then the matrices' own bytes, head after head (row-major
    // floats are the .npy layout): no stacked copy of every head is made.
    const auto write = [&](const char* name, const std::vector<const Mat*>& ms, bool stacked) {
        std::vector<long long> shape = {ms.front()->rows(), ms.front()->cols()};
        if (stacked) shape.insert(shape.begin(), static_cast<long long>(ms.size()));
        ByteSink& sink = batch.open(path(name));
        sink.write(npyHeader(shape));
        for (const Mat* m : ms)  // x86-64 is little-endian: the bytes are '<f4'
            sink.write(std::string_view(reinterpret_cast<const char*>(m->data()), static_cast<std::size_t>(m->size()) * sizeof(float)));
    };
    const auto stack = [&](const char* name, auto member) {
        std::vector<const Mat*> ms;
        for (const HeadTensors& h : forward.heads) ms.push_back(&(h.*member));
        if (ms.empty()) batch.add(path(name), encodeNpy(stackTensor(ms)));
        else write(name, ms, true);
    };
    if (model.explicitQkv) batch.removeOnCommit(path("X.npy"));
    else write("X.npy", {&model.x}, false);
    stack("Q.npy", &HeadTensors::q);
    stack("K.npy", &HeadTensors::k);
    stack("V.npy", &HeadTensors::v);
    stack("scores.npy", &HeadTensors::scores);
    stack("weights.npy", &HeadTensors::weights);
    stack("head_output.npy", &HeadTensors::output);
    write("output.npy", {&forward.output}, false);
    // The variants' own numbers; a file left from an earlier export without them is removed.
    if (model.kvHeads > 0) {
        std::string kv = npyHeader({static_cast<long long>(forward.heads.size())}, "<i8");
        for (std::size_t h = 0; h < forward.heads.size(); ++h) {
            const auto v = static_cast<std::int64_t>(model.kvHeadOf(static_cast<int>(h)));
            kv.append(reinterpret_cast<const char*>(&v), sizeof v);
        }
        batch.add(path("kv_head.npy"), kv);
    } else {
        batch.removeOnCommit(path("kv_head.npy"));
    }
    if (!model.alibiSlopes.empty()) {
        std::string slopes = npyHeader({static_cast<long long>(forward.heads.size())});
        for (const HeadTensors& h : forward.heads) slopes.append(reinterpret_cast<const char*>(&h.alibiSlope), sizeof(float));
        batch.add(path("alibi_slopes.npy"), slopes);
    } else {
        batch.removeOnCommit(path("alibi_slopes.npy"));
    }
    batch.add(path("tokens.txt"), labelsText(model.queryTokens));
    batch.add(path("key_tokens.txt"), labelsText(model.keyTokens));
    writeRolloutNpy(batch, path("rollout.npy"), rollout);
}

std::string weightsCsv(const Model& model, const MatRef& weights) {
    std::string out = "query\\key";
    for (const auto& k : model.keyTokens) {
        out += ',';
        out += csvField(k);
    }
    out += "\n";
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        out += csvField(model.queryTokens[static_cast<std::size_t>(i)]);
        for (Eigen::Index j = 0; j < weights.cols(); ++j) {
            char buffer[32];
            const auto r = std::to_chars(buffer, buffer + sizeof buffer, weights(i, j));
            out += ',';
            out.append(buffer, r.ptr);
        }
        out += "\n";
    }
    return out;
}

namespace {

// A what-if's edits and its next tokens before and after (LoadedModel::nextChanges).
void writeWhatIf(JsonStream& j, const LoadedModel& loaded) {
    const decoder::Checkpoint& model = *loaded.checkpoint;
    std::vector<std::string> edits;
    for (const decoder::Intervention& e : loaded.run->edits) edits.push_back(decoder::interventionText(e));
    j << ",\n  \"what_if\": {\n    \"edits\": ";
    j.strings(edits);
    j << ",\n    \"computed_from_layer\": " << std::to_string(loaded.run->computedFrom());
    const auto tokens = [&](const char* key, const decoder::Run& run) {
        j << ",\n    \"" << key << "\": [";
        const std::vector<decoder::NextToken> next = decoder::topNext(run.logits, 1.0f, static_cast<int>(loaded.next.size()));
        for (std::size_t i = 0; i < next.size(); ++i) {
            j << (i ? ",\n      " : "\n      ") << "{\"id\": " << std::to_string(next[i].id)
              << ", \"token\": " << jsonString(decoder::tokenLabel(model, next[i].id)) << ", \"prob\": ";
            j.number(next[i].prob);
            j << "}";
        }
        j << "\n    ]";
    };
    tokens("next_tokens_before", *loaded.base);
    tokens("next_tokens_after", *loaded.run);
    j << ",\n    \"changes\": [";
    for (std::size_t i = 0; i < loaded.nextChanges.size(); ++i) {
        const decoder::NextTokenChange& c = loaded.nextChanges[i];
        j << (i ? ",\n      " : "\n      ") << "{\"id\": " << std::to_string(c.id)
          << ", \"token\": " << jsonString(decoder::tokenLabel(model, c.id)) << ", \"before\": ";
        j.number(c.before);
        j << ", \"after\": ";
        j.number(c.after);
        j << ", \"dlogprob\": ";
        j.number(static_cast<float>(c.deltaLogProb));
        j << "}";
    }
    j << "\n    ]\n  }";
}

}  // namespace

void writeModelExportJson(ByteSink& out, const Scenario& scenario, const LoadedModel& loaded, const RolloutExport* rollout) {
    const decoder::Checkpoint& model = *loaded.checkpoint;
    const decoder::Run& run = *loaded.run;
    const decoder::Config& c = model.config();
    JsonStream j(out);
    j << "{\n  \"model\": "
      << dumpJson({{"name", model.name()},
                   {"family", c.family},
                   {"n_layer", c.nLayer},
                   {"n_head", c.nHead},
                   {"n_kv_head", c.nKvHead},
                   {"head_dim", c.headDim},
                   {"n_embd", c.nEmbd},
                   {"causal", c.causal}});
    j << ",\n  \"sentence\": " << jsonString(scenario.sentence.value_or(kDefaultSentence));
    if (scenario.pair) j << ",\n  \"pair\": " << jsonString(*scenario.pair);
    j << ",\n  \"tokens\": ";
    j.strings(loaded.labels);
    j << ",\n  \"token_ids\": " << dumpJson(run.ids);
    // an encoder's sentence pair: 0 for [CLS] A [SEP], 1 for B [SEP]; a text alone: every token 0
    j << ",\n  \"token_types\": " << dumpJson(run.types.empty() ? std::vector<int>(run.ids.size(), 0) : run.types);
    j << ",\n  \"layers\": [";
    const AttentionMaps maps = runMaps(run, c);
    Mat scratch;  // a map made on demand
    for (int l = 0; l < run.layerCount(); ++l) {
        j << (l ? ",\n    {\"heads\": [" : "\n    {\"heads\": [");
        for (int h = 0; h < run.headCount(); ++h) {
            j << (h ? ",\n      {\"weights\": " : "\n      {\"weights\": ");
            j.matrix(maps.map(l, h, scratch), 4);
            j << ", \"kv_head\": " << std::to_string(c.kvHeadOf(h)) << "}";
        }
        j << "\n    ]}";
    }
    // The position the predictions read: a decoder's last (the token after it), an encoder's first
    // [MASK] (the token in its place); null when there is none.
    j << "\n  ],\n  \"predicted_position\": " << (run.predicted >= 0 ? std::to_string(run.predicted) : std::string("null"));
    // Tokens the model generated after the text: the first of them (null: none).
    j << ",\n  \"generated_from\": " << (loaded.generated > 0 ? std::to_string(run.ids.size() - loaded.generated) : std::string("null"));
    j << ",\n  \"next_tokens\": [";
    for (std::size_t i = 0; i < loaded.next.size(); ++i) {
        j << (i ? ",\n    " : "\n    ") << "{\"id\": " << std::to_string(loaded.next[i].id)
          << ", \"token\": " << jsonString(loaded.nextLabels[i]) << ", \"prob\": ";
        j.number(loaded.next[i].prob);
        j << "}";
    }
    j << "\n  ]";
    if (loaded.edited()) writeWhatIf(j, loaded);
    writeRollout(j, rollout);
    j << "\n}\n";
    j.flush();
}

void exportModelNpyDir(FileBatch& batch, const std::string& dir, const LoadedModel& loaded, const RolloutExport* rollout,
                       const OneMap* one) {
    namespace fs = std::filesystem;
    batch.makeFolder(dir);
    const auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
    for (const char* name : kScenarioNpyFiles)
        if (std::string_view(name) != "tokens.txt" && std::string_view(name) != "kv_head.npy") batch.removeOnCommit(path(name));
    const decoder::Run& run = *loaded.run;
    if (one && (one->layer < 0 || one->layer >= run.layerCount() || one->head < 0 || one->head >= run.headCount()))
        throw std::invalid_argument("exportModelNpyDir: no such layer or head");
    const int firstLayer = one ? one->layer : 0, lastLayer = one ? one->layer + 1 : run.layerCount();
    const int firstHead = one ? one->head : 0, lastHead = one ? one->head + 1 : run.headCount();
    const auto layers = static_cast<long long>(lastLayer - firstLayer);
    const auto heads = static_cast<long long>(lastHead - firstHead);
    const auto t = static_cast<long long>(run.ids.size());
    // The maps' rows, layer after layer, head after head, row after row: the kept matrices' own,
    // or made a block at a time when the pass keeps none; no stacked copy.
    ByteSink& sink = batch.open(path("attentions.npy"));
    sink.write(npyHeader({layers, heads, t, t}));
    const AttentionMaps maps = runMaps(run, loaded.checkpoint->config());
    const Eigen::Index block = maps.whole() ? std::max<Eigen::Index>(t, 1) : maps.blockRows(std::size_t{1} << 22);
    Mat scratch;
    for (int l = firstLayer; l < lastLayer; ++l)
        for (int h = firstHead; h < lastHead; ++h)
            for (Eigen::Index r0 = 0; r0 < t; r0 += block) {
                const MatRef w = maps.rowBlock(l, h, r0, std::min<Eigen::Index>(block, t - r0), scratch);
                for (Eigen::Index r = 0; r < w.rows(); ++r)
                    sink.write(std::string_view(reinterpret_cast<const char*>(w.row(r).data()),
                                                static_cast<std::size_t>(w.cols()) * sizeof(float)));
            }
    std::string ids = npyHeader({t}, "<i8");
    for (const int id : run.ids) {
        const auto v = static_cast<std::int64_t>(id);
        ids.append(reinterpret_cast<const char*>(&v), sizeof v);  // little-endian, as x86-64 stores it
    }
    batch.add(path("token_ids.npy"), ids);
    // The kv head each query head read (grouped-query models), as a scenario's export gives it.
    const decoder::Config& c = loaded.checkpoint->config();
    if (c.nKvHead != c.nHead) {
        std::string kv = npyHeader({heads}, "<i8");
        for (int h = firstHead; h < lastHead; ++h) {
            const auto v = static_cast<std::int64_t>(c.kvHeadOf(h));
            kv.append(reinterpret_cast<const char*>(&v), sizeof v);
        }
        batch.add(path("kv_head.npy"), kv);
    } else {
        batch.removeOnCommit(path("kv_head.npy"));
    }
    batch.add(path("tokens.txt"), labelsText(loaded.labels));
    std::string next;
    for (std::size_t i = 0; i < loaded.next.size(); ++i) {
        next += std::to_string(loaded.next[i].id) + "\t" + formatNumber(loaded.next[i].prob) + "\t";
        for (char c : sanitizeUtf8(loaded.nextLabels[i])) next += (c == '\n' || c == '\t' ? ' ' : c);
        next += "\n";
    }
    batch.add(path("next_tokens.txt"), next);
    // A what-if: its next tokens before and after ("id<TAB>before<TAB>after<TAB>dlogprob<TAB>label",
    // sorted by |dlogprob|); an earlier export's is removed when there is none.
    if (loaded.edited()) {
        std::string changes;
        for (const decoder::NextTokenChange& c : loaded.nextChanges) {
            changes += std::to_string(c.id) + "\t" + formatNumber(c.before) + "\t" + formatNumber(c.after) + "\t" +
                       formatNumber(static_cast<float>(c.deltaLogProb)) + "\t";
            for (char ch : sanitizeUtf8(decoder::tokenLabel(*loaded.checkpoint, c.id))) changes += (ch == '\n' || ch == '\t' ? ' ' : ch);
            changes += "\n";
        }
        batch.add(path("next_tokens_whatif.txt"), changes);
    } else {
        batch.removeOnCommit(path("next_tokens_whatif.txt"));
    }
    writeRolloutNpy(batch, path("rollout.npy"), rollout);
}

void exportImportedNpyDir(FileBatch& batch, const std::string& dir, const ImportedAttention& imported, const RolloutExport* rollout,
                          const OneMap* one) {
    namespace fs = std::filesystem;
    batch.makeFolder(dir);
    const auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
    for (const char* name : kScenarioNpyFiles)
        if (std::string_view(name) != "tokens.txt") batch.removeOnCommit(path(name));
    for (const char* name : {"token_ids.npy", "next_tokens.txt"}) batch.removeOnCommit(path(name));
    if (one && (one->layer < 0 || one->layer >= imported.layers() || one->head < 0 || one->head >= imported.heads()))
        throw std::invalid_argument("exportImportedNpyDir: no such layer or head");
    const int firstLayer = one ? one->layer : 0, lastLayer = one ? one->layer + 1 : imported.layers();
    const int firstHead = one ? one->head : 0, lastHead = one ? one->head + 1 : imported.heads();
    const auto tq = static_cast<long long>(imported.queries()), tk = static_cast<long long>(imported.keys());
    ByteSink& sink = batch.open(path("attentions.npy"));
    try {
        if (imported.queriesAndKeys()) {
            // Every map made from the queries and keys a block of rows at a time (float32): memory
            // does not grow with the file.
            sink.write(npyHeader({lastLayer - firstLayer, lastHead - firstHead, tq, tk}));
            const Eigen::Index block =
                std::max<Eigen::Index>(1, static_cast<Eigen::Index>((std::size_t{1} << 22) / static_cast<std::size_t>(tk)));
            Mat rows;
            for (int l = firstLayer; l < lastLayer; ++l)
                for (int h = firstHead; h < lastHead; ++h)
                    for (Eigen::Index r0 = 0; r0 < tq; r0 += block) {
                        rows.resize(std::min<Eigen::Index>(block, tq - r0), tk);
                        RowsSink made(rows, r0);
                        imported.weightTiles(l, h, r0, rows.rows(), 0, -1, made);
                        sink.write(std::string_view(reinterpret_cast<const char*>(rows.data()),
                                                    static_cast<std::size_t>(rows.size()) * sizeof(float)));
                    }
        } else {
            // The file's own bytes, map after map, each map's pages given back once written: the
            // data is the input's bit for bit, and the header is numpy's own for that shape and dtype.
            sink.write(
                npyHeader({lastLayer - firstLayer, lastHead - firstHead, tq, tk}, imported.dtype() == MapDType::F32 ? "<f4" : "<f2"));
            for (int l = firstLayer; l < lastLayer; ++l)
                for (int h = firstHead; h < lastHead; ++h) {
                    const auto bytes = imported.mapBytes(l, h);
                    sink.write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
                    imported.release(l, h);
                }
        }
    } catch (const InputError&) {
        imported.checkUnchanged();  // a write from pages the file no longer has fails: the file is to blame
        throw;
    }
    imported.checkUnchanged();
    batch.add(path("tokens.txt"), labelsText(imported.labels()));
    writeRolloutNpy(batch, path("rollout.npy"), rollout);
}

}  // namespace attnviz::core
