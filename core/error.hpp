// Input errors carry where the problem is (file, field, flag) and what it is.
#pragma once

#include <stdexcept>
#include <string>

namespace attnviz::core {

class InputError : public std::runtime_error {
public:
    InputError(std::string where, const std::string& what)
        : std::runtime_error(what), m_where(std::move(where)) {}

    const std::string& where() const { return m_where; }
    // "<where>: <what>", or just "<what>" when no place is known.
    std::string message() const { return m_where.empty() ? what() : m_where + ": " + what(); }

    // Prefix the place, e.g. a file name in front of a field name.
    InputError within(const std::string& outer) const {
        return InputError(m_where.empty() ? outer : outer + ": " + m_where, what());
    }

private:
    std::string m_where;
};

}  // namespace attnviz::core
