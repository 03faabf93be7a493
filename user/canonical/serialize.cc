#include "canonical/serialize.h"

#include <cinttypes>
#include <cstdio>

namespace jackdaw::canonical {

uint32_t SymbolTable::Intern(std::string_view symbol) {
  auto it = ids_.find(std::string(symbol));
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(symbol);
  ids_.emplace(names_.back(), id);
  return id;
}

uint32_t SymbolTable::Intern(const std::string& symbol) {
  auto it = ids_.find(symbol);
  if (it != ids_.end()) return it->second;
  return Intern(std::string_view(symbol));
}

SerializedRequest Serialize(const CanonicalRequest& canonical, SymbolTable* symbols) {
  SerializedRequest out;
  out.request_id = canonical.request_id;
  out.msg_in_bytes = canonical.msg_in_bytes;
  out.msg_out_bytes = canonical.msg_out_bytes;
  out.tokens.reserve(canonical.events.size());
  for (const CanonicalEvent& e : canonical.events) {
    out.tokens.push_back(Token{symbols->Intern(e.symbol), e.demand});
    out.total += e.demand;
  }
  return out;
}

std::string TokenToText(const Token& token, const SymbolTable& symbols) {
  std::string s = symbols.Name(token.symbol);
  if (token.demand.IsZero()) return s;
  char buf[96];
  const char* sep = "{";
  if (token.demand.cpu_ns) {
    // Exact nanoseconds, written as ms with 6 decimals, so equal text means
    // equal demand.
    snprintf(buf, sizeof(buf), "%scpu=%" PRIu64 ".%06" PRIu64 "ms", sep,
             token.demand.cpu_ns / 1000000, token.demand.cpu_ns % 1000000);
    s += buf;
    sep = ",";
  }
  if (token.demand.disk_bytes) {
    snprintf(buf, sizeof(buf), "%sdisk=%" PRIu64 "B", sep, token.demand.disk_bytes);
    s += buf;
    sep = ",";
  }
  if (token.demand.net_bytes) {
    snprintf(buf, sizeof(buf), "%snet=%" PRIu64 "B", sep, token.demand.net_bytes);
    s += buf;
  }
  s += "}";
  return s;
}

std::string ToText(const SerializedRequest& request, const SymbolTable& symbols) {
  std::string s;
  for (const Token& t : request.tokens) {
    if (!s.empty()) s += ' ';
    s += TokenToText(t, symbols);
  }
  return s;
}

}  // namespace jackdaw::canonical
