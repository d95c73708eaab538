// Data a view derives from the state, kept one way: made once for what it depends on (its key),
// remade only when that changes, never per frame. The state holds one of each type in its store,
// so that a view brings its own derived data without a new member of AppState.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>

namespace attnviz::app {

template <class Key, class Value>
struct Derived {
    std::optional<Key> key;     // what `value` was made of; empty: never made
    Value value{};              // empty when it cannot be made (`why`)
    std::uint64_t version = 0;  // changes whenever it is remade (textures cached from it follow)
    std::string why;            // why there is no value; "" when there is
    bool current(const Key& now) const { return key == now; }
    // Starts remaking it for `now`: the key set, the value and the reason cleared, the version moved on.
    Value& remake(const Key& now) {
        key = now;
        value = Value{};
        why.clear();
        ++version;
        return value;
    }
};

// One of each type, made on first use. Move-only, as the state is.
class DerivedStore {
public:
    DerivedStore() = default;
    DerivedStore(DerivedStore&&) = default;
    DerivedStore& operator=(DerivedStore&&) = default;
    DerivedStore(const DerivedStore&) = delete;
    DerivedStore& operator=(const DerivedStore&) = delete;
    ~DerivedStore() = default;

    template <class T>
    T& get() {
        std::shared_ptr<void>& item = m_items[std::type_index(typeid(T))];
        if (!item) item = std::make_shared<T>();
        return *static_cast<T*>(item.get());
    }
    // Null when nothing of type T was made yet.
    template <class T>
    const T* find() const {
        const auto it = m_items.find(std::type_index(typeid(T)));
        return it == m_items.end() ? nullptr : static_cast<const T*>(it->second.get());
    }

private:
    std::map<std::type_index, std::shared_ptr<void>> m_items;
};

}  // namespace attnviz::app
