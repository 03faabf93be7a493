// What changed between two sides whose kinds were matched (kind_matching.h):
// one test per matched kind and metric, corrected together, each with an
// effect size and its share of the change in CPU demand, ranked.
//
//  * frequency: the kind's share of the mix, two-proportion z-test; the
//    requests/s of both sides are reported beside it.
//  * latency, cpu, disk, net: per-request values, Mann–Whitney U; a metric
//    no request of either side has (all zero) is not tested.
//  * structure: a new kind (0 -> its share of AFTER) or a gone kind (its
//    share of BEFORE -> 0), two-proportion z-test, so a single odd request
//    is not called a change.
// Every p-value is Benjamini–Hochberg adjusted over all tests of the diff.
// Effect: the relative change of the median (of the share for frequency;
// +-100 % for structure). Significant: adjusted p < alpha and |effect| at
// least the metric's minimum. The per-request metrics (latency, cpu, disk,
// net) have a larger minimum than the mix: the same load recorded twice
// moves a sub-millisecond kind's median latency or CPU by 15-20 % (wake-up
// delay, caches, clock speed differ between runs), and the per-request test,
// blind to run-to-run variation, calls that significant; the mix is drawn
// request by request, so its test sees all of its noise. A
// structure change also needs min_structure_requests requests on the side
// that has the kind: a cluster of three requests split off in one recording
// is listed, not called a change.
//
// Share: the total CPU demand rate is sum over kinds of requests/s x mean
// CPU per request. Its change per matched kind splits exactly into a
// frequency part, (rate_after - rate_before) x cpu_before, and a cpu part,
// rate_after x (cpu_after - cpu_before); a new kind adds rate x cpu, a gone
// one removes it. A change's share is its part's magnitude over the sum of
// all parts' magnitudes; latency, disk and net move no CPU (share 0).
// Ranking: significant changes first, then by share, then by |effect|.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diff/diff_side.h"
#include "diff/kind_matching.h"

namespace jackdaw::diff {

enum class Metric : uint8_t { kFrequency, kLatency, kCpu, kDisk, kNet, kStructure };
const char* MetricName(Metric m);
// Unit of Change::before / after for the metric.
const char* MetricUnit(Metric m);

struct Change {
  std::string kind;  // BEFORE's labels ("c0", "c0+c3"); "new:cN" for AFTER's new kinds
  Metric metric = Metric::kFrequency;
  double before = 0, after = 0;  // medians (shares for frequency and structure)
  double effect = 0;
  double raw_p = 1;
  double p_value = 1;  // Benjamini–Hochberg adjusted
  bool significant = false;
  double share = 0;
  // The signed change in CPU demand rate (CPU-seconds per second) this
  // change accounts for; share is its magnitude over all of theirs.
  double cpu_rate_delta = 0;
  double rate_before = 0, rate_after = 0;  // requests/s of the kind
  uint64_t structure_requests = 0;  // structure: the kind's requests on the side that has it
};

struct KindSummary {
  std::string kind;
  std::vector<std::string> before_labels, after_labels;
  uint64_t before_requests = 0, after_requests = 0;
  double distance = 0;          // matched: closest pair; new: to its nearest BEFORE kind
  std::string nearest_before;   // new kinds
  std::string representative;   // new kinds: AFTER's representative; gone: BEFORE's
};

struct DiffOptions {
  double min_effect = 0.10;
  double min_request_effect = 0.25;
  uint64_t min_structure_requests = 5;
  double alpha = 0.05;
};

struct DiffResult {
  std::vector<KindSummary> matched, new_kinds, gone_kinds;
  std::vector<Change> changes;  // ranked
  double cpu_rate_before = 0, cpu_rate_after = 0;  // CPU-seconds per second
  uint64_t before_requests = 0, after_requests = 0;
  double before_duration_s = 0, after_duration_s = 0;
};

DiffResult DetectChanges(const Side& before, const Side& after, const KindMatching& matching,
                         const DiffOptions& options = {});

// Adjusts p-values, decides significance and sorts `changes` (exposed for tests).
void CorrectAndRank(std::vector<Change>& changes, const DiffOptions& options);

}  // namespace jackdaw::diff
