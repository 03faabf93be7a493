// Resource-annotated string edit distance (Magpie OSDI'04 §5, HotOS'03 §4).
//
// Requests are compared as serialized strings (canonical/serialize.h). The
// distance is Levenshtein's with costs that add the resource deltas:
//
//   pair a_i with b_j:  w [sym(a_i) != sym(b_j)] + ||r(a_i) - r(b_j)||_2
//   a_i only (delete):  w + ||r(a_i)||_2
//   b_j only (insert):  w + ||r(b_j)||_2
//
// where r(t) = (cpu_ns / S_cpu, disk_bytes / S_disk, u net_bytes / S_net) is
// the token's demand normalised per resource dimension (u, the per-token
// weight of network bytes, is 0 by default: Normalization::token_net_weight). The scales S are,
// by default, the mean per-request total of that resource over the requests
// that use it at all (DeriveNormalization): one unit of distance is then
// "one event more or less" or "a typical request's whole demand of one
// resource moved", so CPU nanoseconds and disk bytes become commensurable
// and neither dominates by its unit. A resource no request uses gets scale 1
// (it never contributes). w, the symbol cost, is kDefaultSymbolCost. See
// README.md for the rationale.
//
// Plus a term on each request's total demand, on a log scale:
//
//   + v || L(a) - L(b) ||_2,   L(s)_d = ln(1 + T(s)_d / g_d)
//
// with T the request's total of resource d and g_d its granularity
// (kCpuGranularityNs, kMinDiskScaleBytes, kMinNetScaleBytes below). The per-token part above is linear in one unit per
// resource, set by the mix of requests: where one kind is much larger than
// the others (a 256 KB response beside 5 KB and 12 KB ones) the unit follows
// it, and the small kinds' difference (7 KB) becomes a few percent of a unit,
// below any sensible threshold. The log term measures totals by ratio: 5 KB
// against 12 KB (with 300 B of request) costs ln(9.2/4.5) ~ 0.7 v, 12 KB
// against 256 KB ~ 2.9 v, both far above noise whatever else is in the
// trace; it is independent of
// the mix (fixed g), so a workload recorded again is measured alike; and it
// does not care how a demand is split into tokens (a response sent in 3 or 4
// chunks). v is kDefaultTotalsWeight.
//
// And a term on the request's message exchange (requests of schemas with
// `messages`: what the client sent and was answered, as the server read and
// wrote it), also by ratio, one dimension per direction:
//
//   + m || M(a) - M(b) ||_2,   M(s) = (ln(1 + in / g_m), ln(1 + out / g_m))
//
// Resource demand alone cannot tell requests whose work is alike but whose
// messages differ (a one-row INSERT from a point SELECT: ~200 us of CPU,
// a few hundred bytes of packets each, 53 B in / 22 B out against 37 B / 90
// B), and packet bytes, with their headers and acknowledgements and a 1500 B
// granularity, see nothing below an MTU. The payload is exact and the same
// for every request of a kind that asks the same thing; on a ratio scale 22
// B against 90 B (1.0 m) is as clear as 5 KB against 12 KB (0.9 m), and a
// few bytes of framing (a length's digits, a counter in a header) are not
// (a 1-byte change in 300 B: 0.003). g_m is kMessageGranularityBytes, m
// kDefaultMessageWeight; 0 for requests without a message on both sides.
//
// Block writes (canonical::Demand::disk_write_bytes) are left out of the
// disk dimension: who flushes a log or a journal, and how much of others'
// data that write carries, is timing (canonical.h,
// CanonicalOptions::durability_symbol_prefixes); the model keeps them.
//
// The distance is a metric (each operation cost is a metric on tokens with
// the empty token as the origin). Two cheap facts make clustering fast:
//  * LowerBound(a, b) = w | |a| - |b| | + ||R(a) - R(b)||_2 + the log term, with R the total
//    normalised demand: every unmatched token costs >= w and, by the
//    triangle inequality, the per-operation resource terms sum to at least
//    the norm of the total difference.
//  * Distance() with a finite cutoff only fills the diagonal band that can
//    hold a path of cost <= cutoff (each step off the diagonal costs >= w:
//    Ukkonen's band), and abandons the dynamic programme as soon as no path
//    through the current row can end at or below the cutoff. At cutoffs of
//    the order of the clustering threshold this makes a comparison nearly
//    linear in the string length instead of quadratic.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "canonical/serialize.h"

namespace jackdaw::cluster {

inline constexpr int kNumResources = 3;  // cpu, disk, net
// The weight of structure against resources. One unit of distance is a
// typical request's whole demand of one resource (see DeriveNormalization);
// an event more, less or different costs a tenth of that. The ratio is the
// one Magpie's own figures imply (Table 2: requests 15 ms of CPU apart are
// 8.5 edit units apart, so one plain edit weighs about 1.8 ms, a tenth of a
// request of that workload), and it keeps zero-demand noise events (a TCP
// ACK more or less) from outweighing real differences in demand while a
// handful of structural differences still separate requests.
inline constexpr double kDefaultSymbolCost = 0.1;
inline constexpr const char* kResourceNames[kNumResources] = {"cpu", "disk", "net"};
// The weight of the log-scale term on total demands: a doubling of one
// resource's total costs ln 2 ~ 0.7 of it, seven plain edits.
inline constexpr double kDefaultTotalsWeight = 1.0;
// The weight of the message term: a doubling of a message costs ln 2 ~ 0.7,
// as a doubling of a resource total does.
inline constexpr double kDefaultMessageWeight = 1.0;
// Below this many bytes a message size difference is framing, not content.
inline constexpr double kMessageGranularityBytes = 16;

// Divisors applied per resource dimension before distances are computed.
struct Normalization {
  double cpu_ns = 1e6;  // 1 ms
  double disk_bytes = 4096;
  double net_bytes = 4096;
  // Cost of a symbol mismatch, and the fixed part of an insertion or
  // deletion, in the same units as one scale of a resource.
  double symbol_cost = kDefaultSymbolCost;
  // Weight of the log-scale term on request totals (0: off).
  double totals_weight = kDefaultTotalsWeight;
  // Weight of the log-scale term on message payload bytes (0: off).
  double message_weight = kDefaultMessageWeight;
  // Weight of each token's network bytes in the edit distance (0: network
  // demand counts only through the log-scale total). How the kernel cuts a
  // response into packets (segmentation offload, the congestion window, a
  // corked socket flushed at close) changes from one request to the next
  // of the same kind: 256 KB sent as 4 x 64 KB or as 2 x 32 KB + 4 x 47 KB
  // is the same demand, but token by token the two differ by several
  // packets' worth of bytes, enough to split one kind into several
  // clusters. The total still separates kinds, by ratio.
  double token_net_weight = 0;

  double scale(int r) const { return r == 0 ? cpu_ns : r == 1 ? disk_bytes : net_bytes; }
};

// The smallest scales DeriveNormalization() returns: the granularity below
// which a difference in a resource is noise, not demand (README.md). The
// disk moves pages; the network moves packets (an Ethernet MTU); CPU below
// about a scheduler time slice per request is dominated by interrupts, cache
// and TLB misses, page faults and probes landing in one event or another.
// The linear CPU floor is a scheduler tick (4 ms at HZ=250): on a shared
// machine one kind's CPU spreads by that much (a 500-row INSERT: 1.0-2.6 ms
// in one recording of a 2-vCPU VM, in two clusters at 1 ms, split at a
// different place each recording), while kinds that differ by less are told
// apart by ratio, through the log term (kCpuGranularityNs, 1 ms: 1.3 ms
// against 0.23 ms is 0.64).
inline constexpr double kMinCpuScaleNs = 4e6;
inline constexpr double kCpuGranularityNs = 1e6;  // of the log term on totals
inline constexpr double kMinDiskScaleBytes = 4096;
inline constexpr double kMinNetScaleBytes = 1500;

// Per resource: the mean per-request total over requests whose total is
// non-zero, but at least the resource's kMin*Scale; 1 where no request uses
// the resource.
Normalization DeriveNormalization(std::span<const canonical::SerializedRequest> requests);

struct NormToken {
  uint32_t symbol = 0;
  float r[kNumResources] = {0, 0, 0};
  float indel = 1;  // w + ||r||: cost of inserting or deleting this token
};

struct NormString {
  std::vector<NormToken> tokens;
  float total[kNumResources] = {0, 0, 0};  // sum of r over tokens
  float symbol_cost = kDefaultSymbolCost;  // Normalization::symbol_cost
  // totals_weight * ln(1 + raw total / granularity), per resource.
  float log_total[kNumResources] = {0, 0, 0};
  // message_weight * ln(1 + payload / kMessageGranularityBytes), in and out.
  float log_msg[2] = {0, 0};
};

// The log-scale terms on totals and messages alone (a lower bound of
// Distance()).
float TotalsDistance(const NormString& a, const NormString& b);

NormString Normalize(const canonical::SerializedRequest& request, const Normalization& norm);

float LowerBound(const NormString& a, const NormString& b);

// Exact distance if it is <= cutoff; otherwise some value > cutoff.
float Distance(const NormString& a, const NormString& b,
               float cutoff = std::numeric_limits<float>::infinity());

// One step of an optimal alignment of a (a request) against b (usually a
// cluster representative), in string order.
enum class EditOp : uint8_t {
  kPair,     // a[a_index] aligned with b[b_index] (same or different symbol)
  kExtra,    // a[a_index] has no counterpart in b
  kMissing,  // b[b_index] has no counterpart in a
};

struct AlignmentStep {
  EditOp op = EditOp::kPair;
  int32_t a_index = -1;
  int32_t b_index = -1;
  float cost = 0;
};

// Full dynamic programme with traceback; O(|a| |b|) memory. The step costs
// plus TotalsDistance(a, b) sum to Distance(a, b).
std::vector<AlignmentStep> Align(const NormString& a, const NormString& b);

}  // namespace jackdaw::cluster
