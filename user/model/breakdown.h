// Latency breakdown of a cluster: AppModel (SIGMETRICS'10) §3.4 delta
// analysis applied to the members of one Magpie cluster.
//
// Members behave alike by construction, so a latency spread inside a cluster
// is either more own work (demand on the critical path grew: the canonical
// latency differs) or waiting the request did not ask for (contention: run
// queue, I/O, locks). The members are sorted by observed latency; the fastest
// and slowest `fraction` of them (at least one each) are averaged and the
// slow - fast deltas compared:
//   work    = delta canonical latency (critical-path demand)
//   runq    = delta run-queue wait
//   io      = delta blocked on disk + network
//   locks   = delta blocked on futexes
//   other   = delta other blocking (pipes included)
// The verdict names the largest positive delta; kNone when the slow group is
// within kNegligibleLatencyDelta of the fast one. Waits are summed over the
// request's threads, so they can exceed the latency delta when threads
// overlap; the explanation quotes them as measured.
#pragma once

#include <span>

#include "request/request.h"
#include "model/workload_model.h"

namespace jackdaw::model {

inline constexpr double kNegligibleLatencyDelta = 0.02;  // of the fast latency

LatencyBreakdown AnalyzeLatency(uint32_t cluster_id, std::span<const uint32_t> members,
                                std::span<const Request> requests,
                                std::span<const RequestSummary> summaries, double fraction);

}  // namespace jackdaw::model
