// Deterministic OTLP trace and span ids. A request exported twice (analyze
// run again on the same trace, or the file and the URL of one run) gets the
// same ids, so a backend deduplicates rather than showing it twice, and a
// test can pin them. The ids hash the trace's identity (its host and its
// header, which holds the recording's start), the request id and the span's
// role within the request; they are not random, so they carry no promise of
// W3C randomness, which no OTLP receiver checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jackdaw::otlp {

// 64-bit FNV-1a of `s`, continued from `seed`; then mixed (splitmix64's
// finaliser) so nearby request ids give unrelated ids.
uint64_t HashBytes(std::string_view s, uint64_t seed = 1469598103934665603ull);
uint64_t Mix(uint64_t x);

// 32 lowercase hex digits (16 bytes), as OTLP/JSON writes a traceId.
std::string TraceIdHex(uint64_t trace_key, uint64_t request_id);
// 16 lowercase hex digits (8 bytes), as OTLP/JSON writes a spanId. `role`
// names the span within its request ("request", "proc:1234:0", "call:3").
std::string SpanIdHex(uint64_t trace_key, uint64_t request_id, std::string_view role);

}  // namespace jackdaw::otlp
