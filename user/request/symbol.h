// model::Symbol — an interned event name ("sys_enter:read", "usdt:app:begin",
// "signal"), the type of RequestEvent::symbol.
//
// Why not std::string: the join emits a symbol for every event of every
// request (~25 per request), and most names are longer than std::string's
// 15-character inline buffer, so each was a heap allocation, a copy and a
// free — a large share of the join's time. A Symbol is one pointer into a
// process-wide table of the distinct names: copying it is free, equality is
// a pointer comparison, and it stays valid for the life of the program (the
// table is never freed). A trace has a few hundred distinct names (syscalls,
// probes, record types), so the table stays small; do not make Symbols of
// unbounded data (ids, timestamps).
//
// It reads like the std::string it replaced: it converts to
// `const std::string&` (a reference into the table, so taking its address is
// safe) and to std::string_view, compares with Symbols, strings, views and
// literals, orders like the strings, hashes like them, and has string's
// read-only members that code used on it.
#pragma once

#include <compare>
#include <cstddef>
#include <deque>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace jackdaw::model {

class Symbol {
 public:
  static constexpr size_t npos = std::string::npos;

  Symbol() = default;  // ""
  // Implicit from literals, so `event.symbol = "wait"` and designated
  // initialisers read as before; explicit from views and strings (an
  // implicit conversion from std::string would make `cond ? str : symbol`
  // ambiguous).
  Symbol(const char* name) : Symbol(std::string_view(name)) {}
  explicit Symbol(std::string_view name) : text_(Intern(name)) {}
  Symbol& operator=(const char* name) { return *this = Symbol(name); }
  Symbol& operator=(std::string_view name) { return *this = Symbol(name); }

  const std::string& str() const { return text_ ? *text_ : Empty(); }
  std::string_view view() const { return str(); }
  operator const std::string&() const { return str(); }
  operator std::string_view() const { return view(); }

  // std::string's read-only members.
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  size_t size() const { return str().size(); }
  size_t length() const { return str().size(); }
  bool empty() const { return text_ == nullptr; }
  char operator[](size_t i) const { return str()[i]; }
  size_t find(std::string_view s, size_t pos = 0) const { return view().find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return view().find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = npos) const { return view().rfind(s, pos); }
  size_t rfind(char c, size_t pos = npos) const { return view().rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t n = npos) const { return str().substr(pos, n); }
  bool starts_with(std::string_view s) const { return view().starts_with(s); }
  bool ends_with(std::string_view s) const { return view().ends_with(s); }
  int compare(std::string_view s) const { return view().compare(s); }

  // Interned: equal names are the same pointer.
  friend bool operator==(const Symbol& a, const Symbol& b) { return a.text_ == b.text_; }
  friend bool operator==(const Symbol& a, const char* b) { return a.view() == b; }
  friend bool operator==(const Symbol& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const Symbol& a, const std::string& b) { return a.view() == b; }
  // By name, not by address: sorting symbols gives the same order as
  // sorting the strings did.
  friend std::strong_ordering operator<=>(const Symbol& a, const Symbol& b) {
    return a.text_ == b.text_ ? std::strong_ordering::equal : a.view() <=> b.view();
  }

  friend std::string operator+(const Symbol& a, std::string_view b) { return a.str() + std::string(b); }
  friend std::string operator+(std::string_view a, const Symbol& b) { return std::string(a) + b.str(); }

  // A template, so that this header needs only <iosfwd>.
  template <typename CharT, typename Traits>
  friend std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, const Symbol& s) {
    return os << s.view();
  }

 private:
  // Distinct names, one std::string each (a deque: the strings never move),
  // indexed by their text. Deliberately leaked, so that Symbols held by
  // static objects stay valid during static destruction.
  struct Table {
    std::mutex mu;
    std::deque<std::string> names;
    std::unordered_map<std::string_view, const std::string*> index;
  };
  static Table& GlobalTable() {
    static Table* table = new Table;
    return *table;
  }
  static const std::string& Empty() {
    static const std::string* empty = new std::string;
    return *empty;
  }
  // nullptr for "", so that a default Symbol needs no table.
  static const std::string* Intern(std::string_view name) {
    if (name.empty()) return nullptr;
    Table& t = GlobalTable();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.index.find(name);
    if (it != t.index.end()) return it->second;
    const std::string* stored = &t.names.emplace_back(name);
    t.index.emplace(std::string_view(*stored), stored);
    return stored;
  }

  const std::string* text_ = nullptr;
};

// Code like `const std::string& s = cond ? some_string : event.symbol;` may
// keep &s: the conditional must bind to the table's string, not to a copy.
static_assert(std::is_lvalue_reference_v<decltype(true ? std::declval<const std::string&>()
                                                       : std::declval<const Symbol&>())>);

}  // namespace jackdaw::model

namespace std {
template <>
struct hash<jackdaw::model::Symbol> {
  size_t operator()(const jackdaw::model::Symbol& s) const noexcept { return hash<string_view>{}(s.view()); }
};
}  // namespace std
