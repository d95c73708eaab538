#include "core/scenario/scenario.hpp"
#include "core/scenario/scenario_reader.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

namespace attnviz::core {

// Why a JSON number cannot be a float ("" when it can).
std::string whyNotFloat(double d) {
    if (!std::isfinite(d)) return "not a finite number";
    if (std::abs(d) > std::numeric_limits<float>::max()) return formatNumber(d) + " is outside the float range (±3.4e38)";
    // Whatever rounds to a non-zero float is taken: the shortest text of the smallest float
    // ("1e-45", which a saved scenario holds) is below denorm_min as a double.
    if (d != 0.0 && static_cast<float>(d) == 0.0f) return formatNumber(d) + " is too close to 0 for a float (smallest: 1.4e-45)";
    return "";
}

namespace {

using nlohmann::json;

std::string expectString(const json& v, const std::string& field) {
    if (!v.is_string()) throw InputError(field, "expected a string, got " + typeName(v));
    return v.get<std::string>();
}

bool expectBool(const json& v, const std::string& field) {
    if (!v.is_boolean()) throw InputError(field, "expected true or false, got " + typeName(v));
    return v.get<bool>();
}

long long expectInteger(const json& v, const std::string& field) {
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.0e15) return static_cast<long long>(d);
        throw InputError(field, "expected a whole number, got " + formatNumber(d));
    }
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))
            throw InputError(field, "number too large: " + std::to_string(u));
        return static_cast<long long>(u);
    }
    if (!v.is_number_integer()) throw InputError(field, "expected a whole number, got " + typeName(v));
    return v.get<long long>();
}

int expectSize(const json& v, const std::string& field) {
    const long long n = expectInteger(v, field);
    if (n < 1) throw InputError(field, "must be at least 1, got " + std::to_string(n));
    if (n > std::numeric_limits<int>::max()) throw InputError(field, "too large: " + std::to_string(n));
    return static_cast<int>(n);
}

float expectFloat(const json& v, const std::string& field) {
    if (!v.is_number()) throw InputError(field, "expected a number, got " + typeName(v));
    const double d = v.get<double>();
    if (std::string why = whyNotFloat(d); !why.empty()) throw InputError(field, why);
    return static_cast<float>(d);
}

std::vector<std::string> expectStrings(const json& v, const std::string& field) {
    if (!v.is_array()) throw InputError(field, "expected a list of strings, got " + typeName(v));
    std::vector<std::string> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(expectString(v[i], field + "[" + std::to_string(i) + "]"));
    return out;
}

// An array of rows, all the same length, of finite numbers.
Mat expectMatrix(const json& v, const std::string& field) {
    if (!v.is_array()) throw InputError(field, "expected a matrix (a list of rows), got " + typeName(v));
    if (v.empty()) throw InputError(field, "matrix has no rows");
    const std::size_t rows = v.size();
    if (!v[0].is_array()) throw InputError(field + "[0]", "expected a row (a list of numbers), got " + typeName(v[0]));
    const std::size_t cols = v[0].size();
    if (cols == 0) throw InputError(field + "[0]", "row is empty");
    Mat m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t r = 0; r < rows; ++r) {
        const json& row = v[r];
        const std::string rowField = field + "[" + std::to_string(r) + "]";
        if (!row.is_array()) throw InputError(rowField, "expected a row (a list of numbers), got " + typeName(row));
        if (row.size() != cols)
            throw InputError(field, "ragged rows: row " + std::to_string(r) + " has " + std::to_string(row.size()) + " values, row 0 has " +
                                        std::to_string(cols));
        for (std::size_t c = 0; c < cols; ++c)
            m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = expectFloat(row[c], rowField + "[" + std::to_string(c) + "]");
    }
    return m;
}

MatrixSpec expectMatrixSpec(const json& v, const std::string& field, bool allowNone) {
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "random") return {MatrixSpec::Kind::Random, {}};
        if (s == "identity") return {MatrixSpec::Kind::Identity, {}};
        if (allowNone && s == "none") return {MatrixSpec::Kind::None, {}};
        throw InputError(field, "expected a matrix, \"random\" or \"identity\"" + std::string(allowNone ? " or \"none\"" : "") +
                                    ", got \"" + clipText(s, 40) + "\"");
    }
    if (allowNone && v.is_null()) return {MatrixSpec::Kind::None, {}};
    return {MatrixSpec::Kind::Explicit, expectMatrix(v, field)};
}

MaskMat maskOf(const Mat& m, const std::string& field) {
    MaskMat mask(m.rows(), m.cols());
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) {
            if (m(r, c) != 0.0f && m(r, c) != 1.0f)
                throw InputError(field + "[" + std::to_string(r) + "][" + std::to_string(c) + "]",
                                 "expected 0 (allowed) or 1 (blocked), got " + formatNumber(m(r, c)));
            mask(r, c) = m(r, c) == 1.0f;
        }
    return mask;
}

// The keys that hold text: a text that is not valid UTF-8 has its exact bytes beside it, as
// "<key>_bytes" (core/base/json_text.hpp).
constexpr const char* kTextKeys[] = {"name",       "description", "sentence",  "pair",       "tokens",
                                     "key_tokens", "model",       "attention", "tokens_file"};

json specJson(const MatrixSpec& spec) {
    switch (spec.kind) {
        case MatrixSpec::Kind::Random: return "random";
        case MatrixSpec::Kind::Identity: return "identity";
        case MatrixSpec::Kind::None: return "none";
        case MatrixSpec::Kind::Explicit: return matrixToJson(spec.value);
    }
    return nullptr;
}

}  // namespace

const std::vector<std::string>& scenarioKeys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k = {"name",    "description", "sentence",    "tokens",      "tokenizer",  "d_model",   "heads",
                                      "d_k",     "d_v",         "seed",        "embedding",   "positional", "rope_base", "kv_heads",
                                      "window",  "X",           "W_Q",         "W_K",         "W_V",        "W_O",       "Q",
                                      "K",       "V",           "causal",      "temperature", "scaled",     "swaps",     "key_tokens",
                                      "padding", "mask",        "length",      "model",       "layer",      "attention", "tokens_file",
                                      "ablate",  "ablate_mean", "hide_tokens", "pair",        "generated"};
        for (const char* text : kTextKeys) k.push_back(std::string(text) + "_bytes");
        return k;
    }();
    return keys;
}

const std::vector<std::string>& modelFixedKeys() {
    static const std::vector<std::string> keys = {"tokens",     "tokenizer", "d_model",  "heads",      "d_k",  "d_v",   "seed", "embedding",
                                                  "positional", "rope_base", "kv_heads", "X",          "W_Q",  "W_K",   "W_V",  "W_O",
                                                  "Q",          "K",         "V",        "key_tokens", "mask", "length"};
    return keys;
}

const std::vector<std::string>& attentionKeys() {
    static const std::vector<std::string> keys = {"name",       "description",       "attention",       "tokens_file",      "layer",
                                                  "name_bytes", "description_bytes", "attention_bytes", "tokens_file_bytes"};
    return keys;
}

namespace {

// A scenario from a JSON tree, and from the matrices parseScenario read beside it (`read`, which
// this moves from; nullptr: every value is in the tree).
Scenario scenarioFrom(const json& j, ReadMatrices* read) {
    if (!j.is_object()) throw InputError("", "a scenario must be a JSON object, got " + typeName(j));
    const auto& keys = scenarioKeys();
    for (const auto& item : j.items())
        if (std::find(keys.begin(), keys.end(), item.key()) == keys.end())
            throw InputError(item.key(), "unknown key (known keys: " + joinStrings(keys, ", ") + ")");

    Scenario s;
    const auto wasRead = [&](const char* key) { return read && read->count(key) > 0; };
    const auto has = [&](const char* key) { return j.contains(key) || wasRead(key); };
    // Text: the exact bytes beside it, when given, are what it is (a text that is not UTF-8).
    for (const char* key : kTextKeys)
        if (const std::string bytes = std::string(key) + "_bytes"; j.contains(bytes) && !j.contains(key))
            throw InputError(bytes, std::string("only beside ") + key);
    const auto text = [&](const char* key) {
        std::string t = expectString(j[key], key);
        const std::string bytes = std::string(key) + "_bytes";
        return j.contains(bytes) ? exactText(key, t, j[bytes]) : t;
    };
    const auto texts = [&](const char* key) {
        std::vector<std::string> t = expectStrings(j[key], key);
        const std::string bytes = std::string(key) + "_bytes";
        return j.contains(bytes) ? exactTexts(key, t, j[bytes]) : t;
    };
    const auto matrix = [&](const char* key) {
        if (!wasRead(key)) return expectMatrix(j[key], key);
        ReadMatrix& m = read->find(key)->second;
        if (m.error) throw InputError(*m.error);
        return std::move(m.value);
    };
    const auto matrixSpec = [&](const char* key, bool allowNone) {
        return wasRead(key) ? MatrixSpec{MatrixSpec::Kind::Explicit, matrix(key)} : expectMatrixSpec(j[key], key, allowNone);
    };
    if (has("name")) s.name = text("name");
    if (has("description")) s.description = text("description");
    if (has("sentence") && has("tokens")) throw InputError("tokens", "give either sentence or tokens, not both");
    if (has("sentence")) s.sentence = text("sentence");
    if (has("pair")) s.pair = text("pair");
    if (has("tokens")) s.tokens = texts("tokens");
    if (has("tokenizer")) {
        const std::string t = expectString(j["tokenizer"], "tokenizer");
        if (t == "word") s.tokenizer = Tokenizer::Word;
        else if (t == "char") s.tokenizer = Tokenizer::Char;
        else throw InputError("tokenizer", "expected \"word\" or \"char\", got \"" + clipText(t, 40) + "\"");
    }
    if (has("d_model")) s.dModel = expectSize(j["d_model"], "d_model");
    if (has("heads")) s.heads = expectSize(j["heads"], "heads");
    if (has("d_k")) s.dk = expectSize(j["d_k"], "d_k");
    if (has("d_v")) s.dv = expectSize(j["d_v"], "d_v");
    if (has("seed")) {
        const long long seed = expectInteger(j["seed"], "seed");
        if (seed < 0) throw InputError("seed", "must be 0 or more, got " + std::to_string(seed));
        s.seed = static_cast<std::uint64_t>(seed);
    }
    if (has("embedding")) {
        const std::string e = expectString(j["embedding"], "embedding");
        if (e == "random") s.embedding = EmbeddingKind::Random;
        else if (e == "onehot") s.embedding = EmbeddingKind::OneHot;
        else throw InputError("embedding", "expected \"random\" or \"onehot\", got \"" + clipText(e, 40) + "\"");
    }
    if (has("positional")) {
        const std::string p = expectString(j["positional"], "positional");
        if (p == "none") s.positional = Positional::None;
        else if (p == "sinusoidal") s.positional = Positional::Sinusoidal;
        else if (p == "rope") s.positional = Positional::Rope;
        else if (p == "alibi") s.positional = Positional::Alibi;
        else throw InputError("positional", "expected \"none\", \"sinusoidal\", \"rope\" or \"alibi\", got \"" + clipText(p, 40) + "\"");
    }
    if (has("rope_base")) {
        if (s.positional != Positional::Rope) throw InputError("rope_base", "only with \"positional\": \"rope\"");
        s.ropeBase = expectFloat(j["rope_base"], "rope_base");
        if (!(s.ropeBase > 1.0f)) throw InputError("rope_base", "must be greater than 1, got " + formatNumber(s.ropeBase));
    }
    if (has("kv_heads")) s.kvHeads = expectSize(j["kv_heads"], "kv_heads");
    if (has("window")) s.window = expectSize(j["window"], "window");
    if (has("X")) s.x = matrix("X");
    if (has("W_Q")) s.wq = matrixSpec("W_Q", false);
    if (has("W_K")) s.wk = matrixSpec("W_K", false);
    if (has("W_V")) s.wv = matrixSpec("W_V", false);
    if (has("W_O")) s.wo = matrixSpec("W_O", true);
    if (has("Q")) s.q = matrix("Q");
    if (has("K")) s.k = matrix("K");
    if (has("V")) s.v = matrix("V");
    if (has("causal")) s.causal = expectBool(j["causal"], "causal"), s.causalGiven = true;
    if (has("temperature")) {
        s.temperature = expectFloat(j["temperature"], "temperature");
        if (!(s.temperature > 0.0f)) throw InputError("temperature", "must be greater than 0, got " + formatNumber(s.temperature));
    }
    if (has("scaled")) s.scaled = expectBool(j["scaled"], "scaled");
    if (has("swaps")) {
        const json& swaps = j["swaps"];
        if (!swaps.is_array()) throw InputError("swaps", "expected a list of [i, j] pairs, got " + typeName(swaps));
        for (std::size_t n = 0; n < swaps.size(); ++n) {
            const std::string field = "swaps[" + std::to_string(n) + "]";
            const json& pair = swaps[n];
            if (!pair.is_array() || pair.size() != 2) throw InputError(field, "expected a pair [i, j] of token positions");
            const long long a = expectInteger(pair[0], field + "[0]");
            const long long b = expectInteger(pair[1], field + "[1]");
            if (a < 0 || b < 0 || a > std::numeric_limits<int>::max() || b > std::numeric_limits<int>::max())
                throw InputError(field, "positions must be 0 or more");
            s.swaps.emplace_back(static_cast<int>(a), static_cast<int>(b));
        }
    }
    if (has("key_tokens")) s.keyTokens = texts("key_tokens");
    if (has("padding")) {
        const json& pad = j["padding"];
        if (!pad.is_array()) throw InputError("padding", "expected a list of key positions, got " + typeName(pad));
        for (std::size_t n = 0; n < pad.size(); ++n) {
            const long long p = expectInteger(pad[n], "padding[" + std::to_string(n) + "]");
            if (p < 0 || p > std::numeric_limits<int>::max())
                throw InputError("padding[" + std::to_string(n) + "]", "positions must be 0 or more");
            s.padding.push_back(static_cast<int>(p));
        }
    }
    if (has("mask")) s.mask = maskOf(matrix("mask"), "mask");
    if (has("length")) s.length = expectSize(j["length"], "length");
    if (has("model")) {
        s.model = text("model");
        if (s.model->empty()) throw InputError("model", "expected a model folder, got an empty text");
        for (const auto& key : modelFixedKeys())
            if (has(key.c_str()))
                throw InputError(key, "not with \"model\": the checkpoint fixes the tokens, sizes and weights (remove " + key + ")");
        if (!has("causal")) s.causal = true;  // a decoder's own mask; the state takes the model's (an encoder's: none)
    }
    if (has("attention")) {
        s.attention = text("attention");
        if (s.attention->empty()) throw InputError("attention", "expected a .npy or safetensors file, got an empty text");
        const auto& allowed = attentionKeys();
        for (const auto& item : j.items())
            if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
                throw InputError(item.key(), "not with \"attention\": the imported maps fix everything else (remove " + item.key() + ")");
        if (read && !read->empty()) {
            const std::string key = read->begin()->first;
            throw InputError(key, "not with \"attention\": the imported maps fix everything else (remove " + key + ")");
        }
    }
    if (has("tokens_file")) {
        if (!s.attention) throw InputError("tokens_file", "only with \"attention\" (it names the imported maps' tokens)");
        s.tokensFile = text("tokens_file");
        if (s.tokensFile->empty())
            throw InputError("tokens_file", "the empty string: name a file, or leave the key out for tokens.txt beside the maps");
    }
    if (has("layer")) {
        if (!s.model && !s.attention) throw InputError("layer", "only with \"model\" (a scenario's own attention has one layer)");
        const long long layer = expectInteger(j["layer"], "layer");
        if (layer < 0 || layer > kMaxLayerIndex)
            throw InputError("layer", "expected a layer from 0 to " + std::to_string(kMaxLayerIndex) + ", got " + std::to_string(layer));
        s.layer = static_cast<int>(layer);
    }
    for (const char* key : {"ablate", "ablate_mean", "hide_tokens", "generated"})
        if (has(key) && !s.model) throw InputError(key, "only with \"model\" (a what-if edits a model's pass)");
    if (s.pair && !s.model) throw InputError("pair", "only with \"model\" (an encoder reads a sentence pair)");
    for (const char* key : {"ablate", "ablate_mean"}) {
        if (!has(key)) continue;
        const json& list = j[key];
        if (!list.is_array()) throw InputError(key, "expected a list of heads \"L.H\", got " + typeName(list));
        for (std::size_t n = 0; n < list.size(); ++n) {
            const std::string field = std::string(key) + "[" + std::to_string(n) + "]";
            const auto head = list[n].is_string() ? parseLayerHead(list[n].get<std::string>()) : std::nullopt;
            if (!head) throw InputError(field, "expected a head as \"L.H\" (layer.head, from 0: \"3.5\"), got " + describeJson(list[n]));
            s.ablations.push_back({head->first, head->second, std::string(key) == "ablate_mean"});
        }
    }
    if (has("hide_tokens")) {
        const json& list = j["hide_tokens"];
        if (!list.is_array()) throw InputError("hide_tokens", "expected a list of token positions, got " + typeName(list));
        for (std::size_t n = 0; n < list.size(); ++n) {
            const long long p = expectInteger(list[n], "hide_tokens[" + std::to_string(n) + "]");
            if (p < 0 || p > std::numeric_limits<int>::max())
                throw InputError("hide_tokens[" + std::to_string(n) + "]", "positions must be 0 or more");
            s.hiddenTokens.push_back(static_cast<int>(p));
        }
    }
    if (has("generated")) {
        const json& list = j["generated"];
        if (!list.is_array()) throw InputError("generated", "expected a list of token ids, got " + typeName(list));
        for (std::size_t n = 0; n < list.size(); ++n) {
            const long long id = expectInteger(list[n], "generated[" + std::to_string(n) + "]");
            if (id < 0 || id > std::numeric_limits<int>::max())
                throw InputError("generated[" + std::to_string(n) + "]", "token ids are 0 or more");
            s.generated.push_back(static_cast<int>(id));
        }
    }
    return s;
}

}  // namespace

Scenario scenarioFromJson(const json& j) { return scenarioFrom(j, nullptr); }

Scenario parseScenario(const std::string& text, const std::string& where, ScenarioParseCounts* counts) {
    ScenarioEvents events = readScenarioEvents(text, where);
    if (counts) *counts = events.counts;
    try {
        return scenarioFrom(events.root, &events.matrices);
    } catch (const InputError& e) {
        throw e.within(where);
    }
}

json matrixToJson(const MatRef& m) {
    json rows = json::array();
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        json row = json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(shortestDouble(m(r, c)));
        rows.push_back(std::move(row));
    }
    return rows;
}

Scenario loadScenarioFile(const std::string& path) {
    Scenario s = parseScenario(readTextFile(path), path);
    // A model folder named relative to the file is found beside it, wherever attnviz runs.
    const auto beside = [&](std::optional<std::string>& p) {
        if (p && !p->empty() && std::filesystem::path(*p).is_relative())
            p = (std::filesystem::path(path).parent_path() / *p).lexically_normal().string();
    };
    beside(s.model);
    beside(s.attention);
    beside(s.tokensFile);
    return s;
}

namespace {

// What every scenario holds: the softmax's settings and the swaps.
void softmaxToJson(const Scenario& s, json& j) {
    j["causal"] = s.causal;
    j["temperature"] = shortestDouble(s.temperature);
    j["scaled"] = s.scaled;
    json swaps = json::array();
    for (const auto& [a, b] : s.swaps) swaps.push_back({a, b});
    j["swaps"] = swaps;
    if (s.window > 0) j["window"] = s.window;
}

// A model scenario: what the checkpoint does not fix.
json modelScenarioToJson(const Scenario& s) {
    json j = json::object();
    if (!s.name.empty()) putText(j, "name", s.name);
    if (!s.description.empty()) putText(j, "description", s.description);
    putText(j, "model", *s.model);
    j["layer"] = s.layer;
    if (s.sentence) putText(j, "sentence", *s.sentence);
    if (s.pair) putText(j, "pair", *s.pair);
    softmaxToJson(s, j);
    if (!s.padding.empty()) j["padding"] = s.padding;
    json zero = json::array(), mean = json::array();
    for (const HeadAblation& a : s.ablations) (a.mean ? mean : zero).push_back(layerHeadText(a.layer, a.head));
    if (!zero.empty()) j["ablate"] = zero;
    if (!mean.empty()) j["ablate_mean"] = mean;
    if (!s.hiddenTokens.empty()) j["hide_tokens"] = s.hiddenTokens;
    if (!s.generated.empty()) j["generated"] = s.generated;
    return j;
}

}  // namespace

std::optional<std::pair<int, int>> parseLayerHead(const std::string& text) {
    const auto dot = text.find('.');
    if (dot == std::string::npos) return std::nullopt;
    const auto number = [](std::string_view digits) -> std::optional<int> {
        int value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || digits[0] == '-' || digits[0] == '+' || ec != std::errc() || end != digits.data() + digits.size())
            return std::nullopt;
        return value;
    };
    const std::string_view all(text);
    const auto layer = number(all.substr(0, dot)), head = number(all.substr(dot + 1));
    if (!layer || !head) return std::nullopt;
    return std::pair<int, int>{*layer, *head};
}

std::string layerHeadText(int layer, int head) { return std::to_string(layer) + "." + std::to_string(head); }

json scenarioToJson(const Scenario& s) {
    if (s.model) return modelScenarioToJson(s);
    if (s.attention) {
        json j = json::object();
        if (!s.name.empty()) putText(j, "name", s.name);
        if (!s.description.empty()) putText(j, "description", s.description);
        putText(j, "attention", *s.attention);
        if (s.tokensFile) putText(j, "tokens_file", *s.tokensFile);
        j["layer"] = s.layer;
        return j;
    }
    json j = json::object();
    if (!s.name.empty()) putText(j, "name", s.name);
    if (!s.description.empty()) putText(j, "description", s.description);
    if (s.sentence) putText(j, "sentence", *s.sentence);
    if (s.tokens) putTexts(j, "tokens", *s.tokens);
    j["tokenizer"] = tokenizerName(s.tokenizer);
    if (s.dModel) j["d_model"] = *s.dModel;
    if (s.heads) j["heads"] = *s.heads;
    if (s.dk) j["d_k"] = *s.dk;
    if (s.dv) j["d_v"] = *s.dv;
    j["seed"] = s.seed;
    j["embedding"] = embeddingName(s.embedding);
    j["positional"] = positionalName(s.positional);
    if (s.positional == Positional::Rope) j["rope_base"] = shortestDouble(s.ropeBase);
    if (s.kvHeads) j["kv_heads"] = *s.kvHeads;
    if (s.x) j["X"] = matrixToJson(*s.x);
    if (!s.q) {
        j["W_Q"] = specJson(s.wq);
        j["W_K"] = specJson(s.wk);
        j["W_V"] = specJson(s.wv);
    }
    j["W_O"] = specJson(s.wo);
    if (s.q) j["Q"] = matrixToJson(*s.q);
    if (s.k) j["K"] = matrixToJson(*s.k);
    if (s.v) j["V"] = matrixToJson(*s.v);
    softmaxToJson(s, j);
    if (s.keyTokens) putTexts(j, "key_tokens", *s.keyTokens);
    if (!s.padding.empty()) j["padding"] = s.padding;
    if (s.mask) {
        json rows = json::array();
        for (Eigen::Index r = 0; r < s.mask->rows(); ++r) {
            json row = json::array();
            for (Eigen::Index c = 0; c < s.mask->cols(); ++c) row.push_back((*s.mask)(r, c) ? 1 : 0);
            rows.push_back(row);
        }
        j["mask"] = rows;
    }
    if (s.length) j["length"] = *s.length;
    return j;
}

std::string headName(const Scenario& s, int head, int heads) {
    const std::string layer = s.model || s.attention ? "layer " + std::to_string(s.layer + 1) + " · " : "";
    const std::string count = std::to_string(heads);
    return layer + (head < 0 ? "mean of " + count + " heads" : "head " + std::to_string(head + 1) + " of " + count);
}

}  // namespace attnviz::core
