// One jackdaw request as one OpenTelemetry trace (OTLP/JSON spans).
//
// Layout (docs/otlp.md):
//   request span   the request as a whole: its start to its end, named by
//                  its cluster label where known ("c0"), else "request";
//                  kind SERVER, attributes its totals (jackdaw.*), its front
//                  connection's peer (net.peer.name/port), incomplete.
//   process spans  one per ProcessSegment, child of the call that reached
//                  it (the Call whose peer_tgid is its tgid) or else of the
//                  request span; kind SERVER; service.name its comm.
//   call spans     one per Call, child of the caller's process span; kind
//                  CLIENT, with the endpoint and bytes each way.
// Every span belongs to a service (its resource's service.name): the
// request and call spans to their process, so a backend draws one lane per
// process as it does for instrumented services.
//
// Times: jackdaw's events are CLOCK_MONOTONIC; a span's wall time is the
// request's start_wall_ns plus its offset from start_ns, so every span of a
// request is placed by one clock reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "request/request.h"

namespace jackdaw::otlp {

// OTLP's SpanKind values (OTLP/JSON writes enums as integers).
inline constexpr int kSpanKindInternal = 1;
inline constexpr int kSpanKindServer = 2;
inline constexpr int kSpanKindClient = 3;

struct SpanContext {
  uint64_t trace_key = 0;  // the recording's identity (span_ids.h)
  std::string host;        // the traced machine (resource host.name)
};

// A span and the service (resource) it belongs to.
struct ServiceSpan {
  std::string service;
  nlohmann::json span;
};

// The request's spans, request span first. `cluster` is its cluster label
// ("c0"), empty when not known.
std::vector<ServiceSpan> RequestSpans(const model::Request& r, const SpanContext& ctx,
                                      const std::string& cluster = {});

// "host:port" (IPv4, "[v6]:port") split at its last colon; port 0 when it
// has none (a unix socket's "unix:/path" keeps its whole name).
struct PeerAddress {
  std::string name;
  uint32_t port = 0;
};
PeerAddress SplitEndpoint(const std::string& endpoint);

}  // namespace jackdaw::otlp
