// A JSONEachRow line written straight into a string: what every row of
// rows.h is made of. Plain ASCII strings are copied with their quotes and
// backslashes escaped; any other string goes through nlohmann's serializer
// (its escapes, invalid UTF-8 replaced), so a process named in Latin-1
// cannot make ClickHouse refuse a batch.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace jackdaw::clickhouse {

class JsonRow {
 public:
  explicit JsonRow(std::string* out) : out_(*out) {}

  // {"key": for the first field, ,"key": after.
  void Key(std::string_view k) {
    out_.append(first_ ? "{\"" : ",\"");
    first_ = false;
    out_.append(k);
    out_.append("\":");
  }
  void U(uint64_t v) { Num(v); }
  void I(int64_t v) { Num(v); }
  // JSON has no inf or NaN: a mean over nothing is written 0.
  void D(double v) {
    if (!std::isfinite(v)) v = 0;
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    (void)ec;
    out_.append(buf, end);
  }
  void Str(std::string_view s) {
    for (unsigned char c : s)
      if (c < 0x20 || c >= 0x80) {
        out_.append(nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        return;
      }
    out_.push_back('"');
    for (char c : s) {
      if (c == '"' || c == '\\') out_.push_back('\\');
      out_.push_back(c);
    }
    out_.push_back('"');
  }
  void Field(std::string_view k, uint64_t v) { Key(k), U(v); }
  void Field(std::string_view k, std::string_view v) { Key(k), Str(v); }
  void Field(std::string_view k, const char* v) { Key(k), Str(v); }
  void Signed(std::string_view k, int64_t v) { Key(k), I(v); }
  void Real(std::string_view k, double v) { Key(k), D(v); }

  // "key":[f(x0),f(x1),...] over a container: one Nested column.
  template <typename C, typename F>
  void Array(std::string_view k, const C& items, F value_of) {
    Key(k);
    out_.push_back('[');
    bool first = true;
    for (const auto& x : items) {
      if (!first) out_.push_back(',');
      first = false;
      Value(value_of(x));
    }
    out_.push_back(']');
  }
  // Closes the object and the line.
  void End() { out_.append(first_ ? "{}\n" : "}\n"); }

 private:
  template <typename T>
  void Num(T v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    (void)ec;
    out_.append(buf, end);
  }
  void Value(uint64_t v) { U(v); }
  void Value(uint32_t v) { U(v); }
  void Value(bool v) { U(v ? 1 : 0); }
  void Value(const std::string& v) { Str(v); }

  std::string& out_;
  bool first_ = true;
};

}  // namespace jackdaw::clickhouse
