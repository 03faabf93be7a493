#include "export/otlp/span_ids.h"

#include <cstdio>

namespace jackdaw::otlp {

uint64_t HashBytes(std::string_view s, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return Mix(h);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {
std::string Hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

std::string TraceIdHex(uint64_t trace_key, uint64_t request_id) {
  const uint64_t hi = Mix(trace_key ^ Mix(request_id));
  uint64_t lo = Mix(hi ^ request_id ^ 0x5bd1e995ull);
  if (hi == 0 && lo == 0) lo = 1;  // all zeros is OTLP's "invalid"
  return Hex64(hi) + Hex64(lo);
}

std::string SpanIdHex(uint64_t trace_key, uint64_t request_id, std::string_view role) {
  uint64_t v = HashBytes(role, Mix(trace_key ^ Mix(request_id)));
  if (v == 0) v = 1;
  return Hex64(v);
}

}  // namespace jackdaw::otlp
