// The kernel's interactions against the join and the clients on the
// real-server suite (issue 11): each run also records `jackdaw interactions
// --pid SERVER --by interaction -o NAME.ia.jdw` — a second, independent BPF
// session holding only the interact group — for the same span as the full
// capture, and its server-role interactions are matched one to one against
//   (a) the clients' ground truth, and
//   (b) the requests the join extracts from the full capture.
//
// Matching (both comparisons): a pair matches when it shares a connection —
// the interaction's remote port is the client's local port, which the truth
// logs and the join's request lists among its connections — and the two
// intervals overlap by at least half of the shorter one (a zero-length
// interval matches when it lies inside the other). Requests of a keep-alive
// connection are disjoint in time, so on one connection this picks the
// right one; a merged interaction or request overlaps several and a split
// one leaves a part unmatched, and neither is guessed around. A pair is
// one-to-one when each side matches only the other. A join request on a
// persistent connection spans its exchange (MatchSpans, as against the
// clients): work it does after the next exchange began is not a merge.
//
// Timing (issue 11's "consistent with the load driver"): of the one-to-one
// pairs with the truth, how many interactions lie inside the client's own
// send..receive interval (same CLOCK_MONOTONIC) within 1 ms at each end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "validate/experiment.h"

namespace jackdaw::validate {

// An interval on one connection: ports it may be found under (a request of
// the join can hold several connections), and CLOCK_MONOTONIC bounds.
struct ConnSpan {
  std::vector<uint16_t> ports;
  uint64_t start_ns = 0, end_ns = 0;
};

struct OneToOne {
  uint64_t left = 0, right = 0;
  uint64_t one_to_one = 0;
  uint64_t left_unmatched = 0, left_multi = 0;    // left items matching none / several
  uint64_t right_unmatched = 0, right_multi = 0;
  std::vector<std::pair<size_t, size_t>> pairs;   // the one-to-one pairs (left, right)
};

// The matching described above, `left` against `right`.
OneToOne MatchOneToOne(const std::vector<ConnSpan>& left, const std::vector<ConnSpan>& right);

struct InteractionAgreement {
  OneToOne truth;          // left: client requests, right: server interactions
  OneToOne join;           // left: server interactions, right: the join's requests
  uint64_t flagged = 0;    // interactions with a JDW_IA_* flag other than CLOSED
  uint64_t inside_1ms = 0; // truth pairs: interaction inside send..recv within 1 ms
  uint64_t lost = 0;       // interactions the recorder reported lost or untracked
  // Interactions that are a connection's set-up exchange the client logged
  // (ReadSetupExchanges: PostgreSQL's startup), matched one to one; they
  // are among truth.right_unmatched.
  uint64_t setup = 0;
};

// Where a run's interactions and the recorder's log go, beside its trace
// ("x.jdw" -> "x.ia.jdw", "x.ia.log").
std::string InteractionsPathFor(const std::string& trace);
std::string InteractionsLogFor(const std::string& trace);

// Starts `jackdaw interactions` on the server's process tree (the server and
// its descendants, forks followed), recording to InteractionsPathFor(trace);
// returns once it follows them.
StatusOr<pid_t> StartInteractionRecorder(const std::string& bin_dir, pid_t server, const std::string& trace);
// SIGINT, wait; an exit other than 0 is an error quoting the log.
Status StopInteractionRecorder(pid_t recorder, const std::string& trace);

// Server-role interaction records of a .jdw (other records are skipped).
StatusOr<std::vector<jdw_interaction>> ReadServerInteractions(const std::string& path);

// The comparison of one recorded run; `requests` are the join's.
InteractionAgreement CompareInteractions(const std::vector<TruthEntry>& truth,
                                         const std::vector<jdw_interaction>& interactions,
                                         const std::vector<ConnSpan>& requests,
                                         const std::vector<TruthEntry>& setups = {});

// Reads the run's interactions and truth, extracts the join's requests with
// `schema` from its full trace, and compares. `lost` comes from the
// recorder's log (its closing summary line).
StatusOr<InteractionAgreement> CompareRunInteractions(const RecordedRun& run, const std::string& schema,
                                                      const std::vector<std::string>& schema_dirs);

// The counts of one run, for reproduce --results.
nlohmann::json AgreementJson(const InteractionAgreement& a);

// One row per run: truth/interactions/join counts and the one-to-one figures.
void PrintInteractionTable(const std::vector<std::pair<std::string, InteractionAgreement>>& rows, FILE* out);

}  // namespace jackdaw::validate
