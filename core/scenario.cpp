#include "core/scenario.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fcntl.h>
#include <unistd.h>

namespace attnviz::core {
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
    if (!std::isfinite(d)) throw InputError(field, "not a finite number");
    if (std::abs(d) > std::numeric_limits<float>::max())
        throw InputError(field, formatNumber(d) + " is outside the float range (±3.4e38)");
    // Whatever rounds to a non-zero float is taken: the shortest text of the smallest float
    // ("1e-45", which a saved scenario holds) is below denorm_min as a double.
    if (d != 0.0 && static_cast<float>(d) == 0.0f)
        throw InputError(field, formatNumber(d) + " is too close to 0 for a float (smallest: 1.4e-45)");
    return static_cast<float>(d);
}

std::vector<std::string> expectStrings(const json& v, const std::string& field) {
    if (!v.is_array()) throw InputError(field, "expected a list of strings, got " + typeName(v));
    std::vector<std::string> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
        out.push_back(expectString(v[i], field + "[" + std::to_string(i) + "]"));
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
            throw InputError(field, "ragged rows: row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                                        " values, row 0 has " + std::to_string(cols));
        for (std::size_t c = 0; c < cols; ++c)
            m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) =
                expectFloat(row[c], rowField + "[" + std::to_string(c) + "]");
    }
    return m;
}

MatrixSpec expectMatrixSpec(const json& v, const std::string& field, bool allowNone) {
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "random") return {MatrixSpec::Kind::Random, {}};
        if (s == "identity") return {MatrixSpec::Kind::Identity, {}};
        if (allowNone && s == "none") return {MatrixSpec::Kind::None, {}};
        throw InputError(field, "expected a matrix, \"random\" or \"identity\"" +
                                    std::string(allowNone ? " or \"none\"" : "") + ", got \"" + clipText(s, 40) + "\"");
    }
    if (allowNone && v.is_null()) return {MatrixSpec::Kind::None, {}};
    return {MatrixSpec::Kind::Explicit, expectMatrix(v, field)};
}

MaskMat expectMask(const json& v, const std::string& field) {
    const Mat m = expectMatrix(v, field);
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

json specJson(const MatrixSpec& spec) {
    switch (spec.kind) {
        case MatrixSpec::Kind::Random: return "random";
        case MatrixSpec::Kind::Identity: return "identity";
        case MatrixSpec::Kind::None: return "none";
        case MatrixSpec::Kind::Explicit: return matrixToJson(spec.value);
    }
    return nullptr;
}

// 1-based line and column of a byte offset, for syntax errors.
std::string lineColumn(const std::string& text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// The offset of the first byte that is not valid UTF-8 (a Latin-1 'é', half a sequence), or npos.
std::size_t firstInvalidUtf8(const std::string& text) {
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t at = pos;
        if (decodeUtf8(text, pos) == 0xFFFD && text.compare(at, 3, "\xEF\xBF\xBD") != 0) return at;
    }
    return std::string::npos;
}

}  // namespace

const std::vector<std::string>& scenarioKeys() {
    static const std::vector<std::string> keys = {
        "name",       "description", "sentence", "tokens", "tokenizer", "d_model", "heads",  "d_k",
        "d_v",        "seed",        "embedding", "positional", "X",    "W_Q",     "W_K",    "W_V",
        "W_O",        "Q",           "K",        "V",      "causal",    "temperature", "scaled", "swaps",
        "key_tokens", "padding",     "mask", "length"};
    return keys;
}

Scenario scenarioFromJson(const json& j) {
    if (!j.is_object()) throw InputError("", "a scenario must be a JSON object, got " + typeName(j));
    const auto& keys = scenarioKeys();
    for (const auto& item : j.items())
        if (std::find(keys.begin(), keys.end(), item.key()) == keys.end())
            throw InputError(item.key(), "unknown key (known keys: " + joinStrings(keys, ", ") + ")");

    Scenario s;
    const auto has = [&](const char* key) { return j.contains(key); };
    if (has("name")) s.name = expectString(j["name"], "name");
    if (has("description")) s.description = expectString(j["description"], "description");
    if (has("sentence") && has("tokens")) throw InputError("tokens", "give either sentence or tokens, not both");
    if (has("sentence")) s.sentence = expectString(j["sentence"], "sentence");
    if (has("tokens")) s.tokens = expectStrings(j["tokens"], "tokens");
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
        else throw InputError("positional", "expected \"none\" or \"sinusoidal\", got \"" + clipText(p, 40) + "\"");
    }
    if (has("X")) s.x = expectMatrix(j["X"], "X");
    if (has("W_Q")) s.wq = expectMatrixSpec(j["W_Q"], "W_Q", false);
    if (has("W_K")) s.wk = expectMatrixSpec(j["W_K"], "W_K", false);
    if (has("W_V")) s.wv = expectMatrixSpec(j["W_V"], "W_V", false);
    if (has("W_O")) s.wo = expectMatrixSpec(j["W_O"], "W_O", true);
    if (has("Q")) s.q = expectMatrix(j["Q"], "Q");
    if (has("K")) s.k = expectMatrix(j["K"], "K");
    if (has("V")) s.v = expectMatrix(j["V"], "V");
    if (has("causal")) s.causal = expectBool(j["causal"], "causal");
    if (has("temperature")) {
        s.temperature = expectFloat(j["temperature"], "temperature");
        if (!(s.temperature > 0.0f))
            throw InputError("temperature", "must be greater than 0, got " + formatNumber(s.temperature));
    }
    if (has("scaled")) s.scaled = expectBool(j["scaled"], "scaled");
    if (has("swaps")) {
        const json& swaps = j["swaps"];
        if (!swaps.is_array()) throw InputError("swaps", "expected a list of [i, j] pairs, got " + typeName(swaps));
        for (std::size_t n = 0; n < swaps.size(); ++n) {
            const std::string field = "swaps[" + std::to_string(n) + "]";
            const json& pair = swaps[n];
            if (!pair.is_array() || pair.size() != 2)
                throw InputError(field, "expected a pair [i, j] of token positions");
            const long long a = expectInteger(pair[0], field + "[0]");
            const long long b = expectInteger(pair[1], field + "[1]");
            if (a < 0 || b < 0 || a > std::numeric_limits<int>::max() || b > std::numeric_limits<int>::max())
                throw InputError(field, "positions must be 0 or more");
            s.swaps.emplace_back(static_cast<int>(a), static_cast<int>(b));
        }
    }
    if (has("key_tokens")) s.keyTokens = expectStrings(j["key_tokens"], "key_tokens");
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
    if (has("mask")) s.mask = expectMask(j["mask"], "mask");
    if (has("length")) s.length = expectSize(j["length"], "length");
    return s;
}

Scenario parseScenario(const std::string& text, const std::string& where) {
    // Checked first so that the message names the byte instead of echoing it (nlohmann's would).
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string::npos) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
        throw InputError(where, std::string("not UTF-8 text: byte ") + hex + " at " + lineColumn(text, bad) +
                                    "; save the file as UTF-8");
    }
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        std::string what = e.what();
        // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error …"
        const auto colon = what.find(": ");
        std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
        throw InputError(where, "malformed JSON at " + lineColumn(text, e.byte == 0 ? 0 : e.byte - 1) + ": " + detail);
    } catch (const json::out_of_range& e) {
        // A number too large for a double ("1e400"): nlohmann names the literal but not its place.
        const std::string what = e.what();
        const auto open = what.find('\''), close = what.rfind('\'');
        const std::string literal = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
        const auto at = literal.empty() ? std::string::npos : text.find(literal);
        throw InputError(where, "malformed JSON" + (at == std::string::npos ? std::string() : " at " + lineColumn(text, at)) +
                                    ": number " + literal + " is out of range");
    } catch (const json::exception& e) {
        throw InputError(where, std::string("malformed JSON: ") + e.what());
    }
    try {
        return scenarioFromJson(j);
    } catch (const InputError& e) {
        throw e.within(where);
    }
}

std::string readTextFile(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw InputError(path, "no such file");
    if (fs::is_directory(status)) throw InputError(path, "is a directory, expected a file");
    // O_NONBLOCK: opening a named pipe that nothing writes to would otherwise wait forever. Reads
    // block again once it is open, so a pipe with a writer (--scenario <(…)) is read to its end.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string text;
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n == 0) break;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;  // e.g. EIO from /proc/self/mem
            ::close(fd);
            throw InputError(path, std::string("read failed: ") + std::strerror(err));
        }
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMaxScenarioFileBytes) {  // /dev/zero, or a file that is not a scenario
            ::close(fd);
            throw InputError(path, "larger than " + std::to_string(kMaxScenarioFileBytes >> 20) + " MiB" +
                                       ", the most a scenario file may be (is it the right file?)");
        }
    }
    ::close(fd);
    return text;
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

Scenario loadScenarioFile(const std::string& path) { return parseScenario(readTextFile(path), path); }

json scenarioToJson(const Scenario& s) {
    json j = json::object();
    if (!s.name.empty()) j["name"] = s.name;
    if (!s.description.empty()) j["description"] = s.description;
    if (s.sentence) j["sentence"] = *s.sentence;
    if (s.tokens) j["tokens"] = *s.tokens;
    j["tokenizer"] = tokenizerName(s.tokenizer);
    if (s.dModel) j["d_model"] = *s.dModel;
    if (s.heads) j["heads"] = *s.heads;
    if (s.dk) j["d_k"] = *s.dk;
    if (s.dv) j["d_v"] = *s.dv;
    j["seed"] = s.seed;
    j["embedding"] = embeddingName(s.embedding);
    j["positional"] = positionalName(s.positional);
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
    j["causal"] = s.causal;
    j["temperature"] = shortestDouble(s.temperature);
    j["scaled"] = s.scaled;
    json swaps = json::array();
    for (const auto& [a, b] : s.swaps) swaps.push_back({a, b});
    j["swaps"] = swaps;
    if (s.keyTokens) j["key_tokens"] = *s.keyTokens;
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

}  // namespace attnviz::core
