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

// What all derived data keeps beside its values (the state's own caches, rollout, the comparison,
// the query–key map, the heads' summary, derive from it too, their values named for what they are).
template <class Key>
struct DerivedOf {
    std::optional<Key> key;     // what the values were made of; empty: never made
    std::uint64_t version = 0;  // changes whenever they are remade (textures cached from them follow)
    std::string why;            // why there are none; "" when there are
    bool current(const Key& now) const { return key == now; }
    // Starts remaking them for `now`: the key set, the reason cleared, the version moved on (the
    // values are the caller's to clear).
    void restart(const Key& now) {
        key = now;
        why.clear();
        ++version;
    }
};

template <class Key, class Value>
struct Derived : DerivedOf<Key> {
    Value value{};  // empty when it cannot be made (`why`)
    // Starts remaking it for `now`: as restart, the value cleared too.
    Value& remake(const Key& now) {
        this->restart(now);
        value = Value{};
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
