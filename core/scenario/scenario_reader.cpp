// The scenario's text as parser events: matrices straight into floats, the rest into a tree.
#include "core/scenario/scenario_reader.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/base/utf8.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

namespace attnviz::core {
namespace {

using nlohmann::json;

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

    void rowIsNot(const char* type) { m_error.emplace(field(), std::string("expected a row (a list of numbers), got ") + type); }

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
            return void(m_error.emplace(m_key, "ragged rows: row " + std::to_string(m_rows) + " has " + std::to_string(m_col) +
                                                   " values, row 0 has " + std::to_string(m_cols)));
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

    bool null() {
        return scalar("null", false, 0.0, [] { return json(nullptr); });
    }
    bool boolean(bool b) {
        return scalar("a boolean", false, 0.0, [b] { return json(b); });
    }
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
    bool string(json::string_t& s) {
        return scalar("a string", false, 0.0, [&s] { return json(s); });
    }
    bool binary(json::binary_t& b) {
        return scalar("a binary", false, 0.0, [&b] { return json(std::move(b)); });
    }
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
            throw InputError(m_where, "malformed JSON" + (at == std::string::npos ? std::string() : " at " + lineColumn(m_text, at)) +
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
            if (m_stack.size() >= static_cast<std::size_t>(kMaxJsonDepth))
                throw InputError(m_key, "nested deeper than " + std::to_string(kMaxJsonDepth) +
                                            " levels of objects and lists; no file attnviz reads nests so deep")
                    .within(m_where);
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

ScenarioEvents readScenarioEvents(const std::string& text, const std::string& where) {
    // Checked first so that the message names the byte instead of echoing it (nlohmann's would).
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string::npos) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
        throw InputError(where, std::string("not UTF-8 text: byte ") + hex + " at " + lineColumn(text, bad) + "; save the file as UTF-8");
    }
    ScenarioSax sax(text, where);
    json::sax_parse(text, &sax);  // syntax errors throw from sax.parse_error
    return {std::move(sax.root), std::move(sax.matrices), sax.counts};
}

}  // namespace attnviz::core
