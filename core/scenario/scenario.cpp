#include "core/scenario/scenario.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
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

// Why a JSON number cannot be a float ("" when it can).
std::string whyNotFloat(double d) {
    if (!std::isfinite(d)) return "not a finite number";
    if (std::abs(d) > std::numeric_limits<float>::max())
        return formatNumber(d) + " is outside the float range (±3.4e38)";
    // Whatever rounds to a non-zero float is taken: the shortest text of the smallest float
    // ("1e-45", which a saved scenario holds) is below denorm_min as a double.
    if (d != 0.0 && static_cast<float>(d) == 0.0f)
        return formatNumber(d) + " is too close to 0 for a float (smallest: 1.4e-45)";
    return "";
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

// A matrix read from the parser's events (parseScenario), or the first error expectMatrix would
// have thrown for its value, kept until the scenario reads that key so that errors keep their order.
struct ReadMatrix {
    Mat value;
    std::optional<InputError> error;
};
using ReadMatrices = std::map<std::string, ReadMatrix, std::less<>>;

bool isMatrixKey(std::string_view key) {
    for (const char* k : {"X", "W_Q", "W_K", "W_V", "W_O", "Q", "K", "V", "mask"})
        if (key == k) return true;
    return false;
}

// One matrix value [[n, …], …] as its events arrive, checked as expectMatrix checks it and in
// its order (row r is a list, has row 0's length, then holds numbers that fit a float); the first
// error is kept and the rest of the value skipped. The numbers go into one column grown by
// realloc (a large block moves by remapping its pages, not copying them), reshaped to
// [rows, cols] at the end without a copy.
class MatrixReader {
public:
    explicit MatrixReader(std::string key) : m_key(std::move(key)) {}

    void open(bool array) {
        const int level = ++m_level;  // 1: the matrix, 2: a row, 3: inside a row
        if (level == 1 || m_error || m_skipFrom) return;
        if (level == 2 && array) {
            m_col = 0;
            m_rowError.reset();
        } else if (level == 2) {
            rowIsNot("an object");
        } else {
            item(array ? "an array" : "an object", 0.0);
            m_skipFrom = level;  // counted as one item when it closes
        }
    }

    // True when the matrix itself closed.
    bool close() {
        const int level = m_level--;
        if (level == 1) {
            if (!m_error && m_rows == 0) m_error.emplace(m_key, "matrix has no rows");
            return true;
        }
        if (m_error) return false;
        if (m_skipFrom) {
            if (level == m_skipFrom) m_skipFrom = 0, ++m_col;
            return false;
        }
        if (level == 2) endRow();
        return false;
    }

    // type: as typeName says it ("an integer", "a string"…); d: the value when it is a number.
    void scalar(const char* type, bool number, double d) {
        if (m_error || m_skipFrom) return;
        if (m_level == 1) return rowIsNot(type);
        item(number ? nullptr : type, d);
        ++m_col;
    }

    std::size_t numbers() const { return m_n; }

    ReadMatrix result() && {
        if (m_error) return {Mat(), std::move(m_error)};
        m_flat.conservativeResize(static_cast<Eigen::Index>(m_n), 1);
        m_flat.resize(m_rows, m_cols);  // the same size: the numbers stay, row-major as they came
        return {std::move(m_flat), std::nullopt};
    }

private:
    std::string field() const { return m_key + "[" + std::to_string(m_rows) + "]"; }

    void rowIsNot(const char* type) {
        m_error.emplace(field(), std::string("expected a row (a list of numbers), got ") + type);
    }

    // notNumber: the item's type when it is not a number.
    void item(const char* notNumber, double d) {
        if (m_rowError) return;
        const std::string why = notNumber ? std::string("expected a number, got ") + notNumber : whyNotFloat(d);
        if (!why.empty()) {
            m_rowError.emplace(field() + "[" + std::to_string(m_col) + "]", why);
        } else if (m_rows == 0 || m_col < m_cols) {
            if (m_n == static_cast<std::size_t>(m_flat.rows()))
                m_flat.conservativeResize(std::max<Eigen::Index>(4096, 2 * m_flat.rows()), 1);
            m_flat(static_cast<Eigen::Index>(m_n++), 0) = static_cast<float>(d);
        }
    }

    void endRow() {
        if (m_rows == 0) {
            if (m_col == 0) return void(m_error.emplace(field(), "row is empty"));
            m_cols = m_col;
        } else if (m_col != m_cols) {
            return void(m_error.emplace(m_key, "ragged rows: row " + std::to_string(m_rows) + " has " +
                                                   std::to_string(m_col) + " values, row 0 has " + std::to_string(m_cols)));
        }
        if (m_rowError) return void(m_error = std::move(m_rowError));
        ++m_rows;
    }

    std::string m_key;
    Mat m_flat;  // [capacity, 1], the first m_n used
    std::size_t m_n = 0;
    Eigen::Index m_rows = 0, m_cols = 0, m_col = 0;
    int m_level = 0, m_skipFrom = 0;  // m_skipFrom: the level of an item being skipped (a list in a row)
    std::optional<InputError> m_rowError, m_error;
};

// nlohmann's SAX events into a scenario: the matrices' numbers through MatrixReader, everything
// else into a JSON tree as json::parse builds it (a repeated key: the last counts), except an
// unknown key's value, which nothing reads. The tree holds at most kMaxScenarioJsonValues values.
class ScenarioSax {
public:
    ScenarioSax(const std::string& text, const std::string& where) : m_text(text), m_where(where) {}

    json root;
    ReadMatrices matrices;
    ScenarioParseCounts counts;

    bool null() { return scalar("null", false, 0.0, [] { return json(nullptr); }); }
    bool boolean(bool b) { return scalar("a boolean", false, 0.0, [b] { return json(b); }); }
    bool number_integer(json::number_integer_t n) {
        return scalar("an integer", true, static_cast<double>(n), [n] { return json(n); });
    }
    bool number_unsigned(json::number_unsigned_t n) {
        return scalar("an integer", true, static_cast<double>(n), [n] { return json(n); });
    }
    bool number_float(json::number_float_t d, const json::string_t&) {
        return scalar("a number", true, d, [d] { return json(d); });
    }
    // copied, not moved: the lexer's buffer has grown past the string, a copy is its own size
    bool string(json::string_t& s) { return scalar("a string", false, 0.0, [&s] { return json(s); }); }
    bool binary(json::binary_t& b) { return scalar("a binary", false, 0.0, [&b] { return json(std::move(b)); }); }
    bool start_object(std::size_t) { return open(false); }
    bool start_array(std::size_t) { return open(true); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(json::string_t& k) {
        if (m_matrix || m_skipDepth > 0) return true;
        if (m_stack.size() == 1 && m_stack.back() == &root) {  // a scenario's key
            m_key = k;
            root.erase(k);  // a repeated key: the last one counts
            matrices.erase(k);
            const auto& keys = scenarioKeys();
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
                m_slot = &root[k];
                add(nullptr);  // named by the unknown-key error; its value is skipped unread
                m_skipDepth = 0;
                return true;
            }
            m_matrixNext = isMatrixKey(k);
        }
        m_slot = &(*m_stack.back())[k];
        return true;
    }

    bool parse_error(std::size_t position, const std::string& token, const json::exception& e) {
        if (e.id == 406) {  // a number too large for a double ("1e400")
            const auto at = m_text.rfind(token, position);
            throw InputError(m_where, "malformed JSON" +
                                          (at == std::string::npos ? std::string() : " at " + lineColumn(m_text, at)) +
                                          ": number " + token + " is out of range");
        }
        if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) {
            // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error …"
            const std::string what = p->what();
            const auto colon = what.find(": ");
            const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
            throw InputError(m_where, "malformed JSON at " + lineColumn(m_text, p->byte == 0 ? 0 : p->byte - 1) + ": " + detail);
        }
        throw InputError(m_where, std::string("malformed JSON: ") + e.what());
    }

private:
    template <class Make>
    bool scalar(const char* type, bool number, double d, Make make) {
        if (m_matrix) {
            m_matrix->scalar(type, number, d);
        } else if (m_skipDepth >= 0) {
            if (m_skipDepth == 0) m_skipDepth = -1;
        } else {
            m_matrixNext = false;
            add(make());
        }
        return true;
    }

    bool open(bool array) {
        if (m_matrix) {
            m_matrix->open(array);
        } else if (m_skipDepth >= 0) {
            ++m_skipDepth;
        } else if (m_matrixNext && array) {
            m_matrixNext = false;
            m_matrix.emplace(m_key);
            m_matrix->open(true);
        } else {
            m_matrixNext = false;
            m_stack.push_back(add(array ? json::array() : json::object()));
        }
        return true;
    }

    bool close() {
        if (m_matrix) {
            if (m_matrix->close()) {
                counts.matrixNumbers += m_matrix->numbers();
                matrices[m_key] = std::move(*m_matrix).result();
                m_matrix.reset();
            }
        } else if (m_skipDepth > 0) {
            if (--m_skipDepth == 0) m_skipDepth = -1;
        } else {
            m_stack.pop_back();
        }
        return true;
    }

    // Where the value goes: the root, the open array's end, or the member whose key came last.
    json* add(json&& v) {
        if (++counts.jsonValues > kMaxScenarioJsonValues)
            throw InputError(m_key, "more than " + std::to_string(kMaxScenarioJsonValues) +
                                        " values outside the matrices; no scenario holds that many (is it the right file?)")
                .within(m_where);
        if (m_stack.empty()) return &(root = std::move(v));
        if (m_stack.back()->is_array()) {
            m_stack.back()->push_back(std::move(v));
            return &m_stack.back()->back();
        }
        *m_slot = std::move(v);
        return m_slot;
    }

    const std::string& m_text;
    const std::string& m_where;
    std::vector<json*> m_stack;  // the open arrays and objects of the tree (a pointer stays valid while open)
    json* m_slot = nullptr;      // the member of the open object whose key came last
    std::string m_key;           // the scenario's key being read
    bool m_matrixNext = false;   // the next value is a matrix key's
    int m_skipDepth = -1;        // >= 0: skipping an unknown key's value, this deep in it
    std::optional<MatrixReader> m_matrix;
};

}  // namespace

const std::vector<std::string>& scenarioKeys() {
    static const std::vector<std::string> keys = {
        "name",       "description", "sentence", "tokens", "tokenizer", "d_model", "heads",  "d_k",
        "d_v",        "seed",        "embedding", "positional", "X",    "W_Q",     "W_K",    "W_V",
        "W_O",        "Q",           "K",        "V",      "causal",    "temperature", "scaled", "swaps",
        "key_tokens", "padding",     "mask", "length"};
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
    const auto matrix = [&](const char* key) {
        if (!wasRead(key)) return expectMatrix(j[key], key);
        ReadMatrix& m = read->find(key)->second;
        if (m.error) throw InputError(*m.error);
        return std::move(m.value);
    };
    const auto matrixSpec = [&](const char* key, bool allowNone) {
        return wasRead(key) ? MatrixSpec{MatrixSpec::Kind::Explicit, matrix(key)} : expectMatrixSpec(j[key], key, allowNone);
    };
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
    if (has("X")) s.x = matrix("X");
    if (has("W_Q")) s.wq = matrixSpec("W_Q", false);
    if (has("W_K")) s.wk = matrixSpec("W_K", false);
    if (has("W_V")) s.wv = matrixSpec("W_V", false);
    if (has("W_O")) s.wo = matrixSpec("W_O", true);
    if (has("Q")) s.q = matrix("Q");
    if (has("K")) s.k = matrix("K");
    if (has("V")) s.v = matrix("V");
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
    if (has("mask")) s.mask = maskOf(matrix("mask"), "mask");
    if (has("length")) s.length = expectSize(j["length"], "length");
    return s;
}

}  // namespace

Scenario scenarioFromJson(const json& j) { return scenarioFrom(j, nullptr); }

Scenario parseScenario(const std::string& text, const std::string& where, ScenarioParseCounts* counts) {
    // Checked first so that the message names the byte instead of echoing it (nlohmann's would).
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string::npos) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
        throw InputError(where, std::string("not UTF-8 text: byte ") + hex + " at " + lineColumn(text, bad) +
                                    "; save the file as UTF-8");
    }
    ScenarioSax sax(text, where);
    json::sax_parse(text, &sax);  // syntax errors throw from sax.parse_error
    if (counts) *counts = sax.counts;
    try {
        return scenarioFrom(sax.root, &sax.matrices);
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
    const auto tooLarge = [&] {
        return InputError(path, "larger than " + std::to_string(kMaxScenarioFileBytes >> 20) + " MiB" +
                                    ", the most a scenario file may be (is it the right file?)");
    };
    // O_NONBLOCK: opening a named pipe that nothing writes to would otherwise wait forever. Reads
    // block again once it is open, so a pipe with a writer (--scenario <(…)) is read to its end.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string text;
    // A regular file says its size: one over the limit is refused unread, and one under it is
    // read into a string of its size (appending would double the string, and copy it, as it grows).
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
        if (static_cast<std::uint64_t>(info.st_size) > kMaxScenarioFileBytes) {
            ::close(fd);
            throw tooLarge();
        }
        text.reserve(static_cast<std::size_t>(info.st_size));
    }
    char buffer[1 << 16];
    for (;;) {
        // never past one byte over the limit: /dev/zero, or a pipe that does not end
        const std::size_t want = std::min(sizeof buffer, kMaxScenarioFileBytes + 1 - text.size());
        const ssize_t n = ::read(fd, buffer, want);
        if (n == 0) break;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;  // e.g. EIO from /proc/self/mem
            ::close(fd);
            throw InputError(path, std::string("read failed: ") + std::strerror(err));
        }
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMaxScenarioFileBytes) {
            ::close(fd);
            throw tooLarge();
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
