// Turns a finished event set into a model::Request (Magpie §3's output):
// its real events in (ts, seq) order with the synthetic ones merged in (a
// Wait after each WAIT event; a Signal after each causal edge's source and
// a Resume before its target), its causal edges as indices, its resource
// totals, and its connections.
//
// Resources were charged to events as they joined; here they are summed,
// with each event's off-CPU period clipped to the request's start (idle
// time of a pool thread waiting for work is not the request's). Edges whose
// ends are not both in the set, or that would point backwards in time, are
// dropped. The builder owns only scratch space reused across requests; it
// reads the join's symbols and clock and never touches the join's counters:
// what the caller needs for them comes back in Charged.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <string>
#include <unordered_map>

#include "join/event_set.h"
#include "join/symbol_table.h"
#include "request/request.h"
#include "trace/clock.h"

namespace jackdaw::join {

class RequestBuilder {
 public:
  // The request's process, as far as CPU accounting compares with it.
  struct ProcessWindow {
    uint64_t from_ts;  // its first seed event
  };
  // What the request consumed, for the join's counters.
  struct Charged {
    uint64_t process_cpu_ns = 0;  // task CPU of the request's own process (0 without a process)
    uint64_t pre_window_ns = 0;   // the part of it that ran before the process' window opened
    uint64_t softirq_ns = 0;      // interrupt time charged
    uint64_t wakeup_edges = 0, sync_edges = 0;
  };

  RequestBuilder(const SymbolTable& symbols, const trace::ClockMapping& clock) : symbols_(symbols), clock_(clock) {}
  // Process names by tgid, for the requests' process segments (not owned;
  // nullptr: segments carry no names).
  void SetProcessNames(const std::unordered_map<uint32_t, std::string>* comms) { comms_ = comms; }

  // Sorts the set's events and edges in place. `process`: the account of
  // the request's process (tgid), nullptr if it has none.
  model::Request Build(Set& s, bool timed_out, uint64_t id, const ProcessWindow* process, Charged* charged);

 private:
  // Where a synthetic item sits relative to the real event it belongs to
  // (same ts and seq): a Resume before it, a Signal and a Wait after it.
  enum Sub : uint8_t { kSubResume = 0, kSubReal = 1, kSubSignal = 2, kSubWait = 3 };
  // A synthetic event to be placed among the request's real ones.
  struct Item {
    uint64_t ts;
    uint64_t seq;
    uint8_t sub;  // Sub
    uint32_t tid;
    uint16_t cpu;
  };

  const SymbolTable& symbols_;
  const trace::ClockMapping& clock_;
  const std::unordered_map<uint32_t, std::string>* comms_ = nullptr;
  // The synthetic events' symbols, interned once.
  const model::Symbol resume_symbol_{"resume"}, signal_symbol_{"signal"}, wait_symbol_{"wait"};
  // Scratch, reused across requests.
  std::vector<Item> scratch_items_;
  std::vector<uint32_t> scratch_order_, scratch_pos_;
  std::vector<std::pair<uint32_t, uint32_t>> scratch_edge_items_;
  std::vector<model::EdgeKind> scratch_edge_kinds_;
};

}  // namespace jackdaw::join
