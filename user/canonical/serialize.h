// Deterministic serialization of canonical requests (Magpie §4.2).
//
// A serialized request is the depth-first flattening of the canonical tree:
// one token per canonical event, each an interned event symbol annotated
// with the event's demand. Thread ids, timestamps and interleaving do not
// enter it, so identical behaviour yields identical tokens. The clusterer
// compares these strings with a resource-aware edit distance
// (cluster/distance.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "canonical/canonical.h"

namespace jackdaw::canonical {

// Interns symbols to dense ids so the edit distance compares integers.
// Ids are assigned in order of first Intern(); they are only meaningful
// within one table, so every request compared must go through the same one.
class SymbolTable {
 public:
  uint32_t Intern(std::string_view symbol);
  // A symbol already held as a std::string is looked up as it is (no copy
  // made for the lookup: a request's symbols are mostly longer than the
  // small-string buffer, so the copy was an allocation per token).
  uint32_t Intern(const std::string& symbol);
  uint32_t Intern(const char* symbol) { return Intern(std::string_view(symbol)); }
  const std::string& Name(uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
};

struct Token {
  uint32_t symbol = 0;
  Demand demand;
  bool operator==(const Token&) const = default;
};

struct SerializedRequest {
  uint64_t request_id = 0;
  std::vector<Token> tokens;
  Demand total;
  uint64_t msg_in_bytes = 0, msg_out_bytes = 0;  // CanonicalRequest's
};

SerializedRequest Serialize(const CanonicalRequest& canonical, SymbolTable* symbols);

// Human-readable, stable text form: tokens separated by spaces, each
// `symbol{cpu=1.500ms,disk=12288B,net=250B}` with zero resources omitted
// (`symbol` alone when all are zero). Equal strings <=> equal tokens.
std::string ToText(const SerializedRequest& request, const SymbolTable& symbols);
std::string TokenToText(const Token& token, const SymbolTable& symbols);

}  // namespace jackdaw::canonical
