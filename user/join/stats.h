// The join's counters: one table of name, severity and description
// (JDW_JOIN_STATS), from which the Stats struct, the per-counter metadata
// (kStatsInfo) and every printer are generated, so a counter added here is
// reported everywhere without a second list to keep in step.
//
// Severity says what a non-zero value means for the user:
//   kInfo      how the join went (sizes, rates, what it matched);
//   kDataLoss  evidence the trace held, or should have held, that no request
//              got: `jackdaw analyze` prints every such counter that is not 0;
//   kError     the trace contradicts itself (malformed records, ids with no
//              table entry): printed like data loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jackdaw::join {

enum class Severity : uint8_t { kInfo, kDataLoss, kError };

// X(name, severity, description). Order is the order of every printout.
// clang-format off
#define JDW_JOIN_STATS(X)                                                                                    \
  /* input */                                                                                                \
  X(records_in, kInfo, "records pushed into the join")                                                        \
  X(records_processed, kInfo, "records processed in timestamp order, after the reorder window")               \
  X(bad_records, kError, "records shorter than their type's payload: skipped")                                \
  X(late_records, kDataLoss, "records beyond the reorder window: dropped, not joined")                        \
  X(late_io_starts, kDataLoss, "synthetic block-request starts beyond the reorder window: dropped")           \
  X(io_starts, kInfo, "synthetic block-request starts inserted (one per block completion)")                   \
  /* block_issue records whose block_complete never came (lost by the capture): their bytes and start are */ \
  /* missing from every request. */                                                                          \
  X(block_completions_missing, kDataLoss,                                                                     \
    "block requests whose completion never came: their bytes are in no request")                              \
  /* Issued less than a second before the end of the trace: in flight when recording stopped, or their */    \
  /* completion was lost (on some hosts no probe fires while a particular task is current, see README */     \
  /* "Known limits"); the trace cannot tell. */                                                              \
  X(block_completions_unseen_at_end, kInfo,                                                                   \
    "block requests issued within a second of the end of the trace without a completion")                     \
  /* join */                                                                                                 \
  X(events_matched, kInfo, "records that matched an event definition")                                        \
  X(events_joined, kInfo, "matched events that entered a set")                                                \
  X(events_unbound, kInfo, "matched events whose every binding value was absent")                             \
  /* Interrupt-context TCP packets of a connection not yet accepted (its socket unknown): held, then joined */ \
  /* to the first request that uses the socket, or dropped (never accepted within the timeout, or over the */ \
  /* per-connection cap). */                                                                                 \
  X(early_packets_joined, kInfo, "packets that arrived before accept() named their socket, joined later")     \
  X(early_packets_dropped, kDataLoss,                                                                         \
    "packets that arrived before accept() and were never joined (not accepted, or over the cap)")            \
  X(bindings_skipped, kInfo, "bindings skipped: value 0, unresolved socket, or a tid in interrupt context")   \
  X(events_in_requests, kInfo, "events in emitted requests")                                                  \
  X(events_discarded, kInfo, "events in sets without a seed event: discarded")                                \
  X(sets_created, kInfo, "event sets created")                                                                \
  X(sets_merged, kInfo, "event sets merged (union)")                                                          \
  X(intervals_cascaded, kInfo, "valid-intervals closed by a schema cascade")                                  \
  /* An event whose bindings reach two different requests (sets that both hold a seed): it joins the first */ \
  /* binding's, the other is left alone. */                                                                  \
  X(seed_conflicts, kDataLoss, "events whose bindings reached two requests: kept apart, one binding unused")  \
  X(sets_discarded, kInfo, "sets closed without a seed event: discarded")                                     \
  X(sets_timed_out, kInfo, "sets closed by the timeout or the end of the trace")                              \
  X(requests_emitted, kInfo, "requests emitted")                                                              \
  X(requests_timed_out, kInfo, "requests closed by the timeout or the end of the trace")                      \
  /* The capture located its losses (trace/loss_intervals.h): a request that ran on a CPU while records of */  \
  /* a group its join needs were lost there is marked incomplete (Request::incomplete). */                    \
  X(requests_incomplete, kDataLoss, "requests that ran on a CPU while the capture lost records there: incomplete") \
  X(edges_wakeup, kInfo, "causal edges from sched_wakeup")                                                    \
  /* sched_wakeups the kernel ran in interrupt context on the wakee's CPU (remote wakeups of an idle CPU), */ \
  /* attributed to the thread whose futex wake caused them: to the schema they are that thread's events. */  \
  X(wakeups_attributed, kInfo, "remote (interrupt-context) wakeups attributed to the futex waker")            \
  X(wakeups_contention, kInfo,                                                                                \
    "wakeups between threads each serving a request of its own: contention, not joined")                      \
  X(edges_sync, kInfo, "causal edges from schema SYNC statements")                                            \
  X(usdt_unknown_probe, kError, "USDT records whose probe id is not in the trace's probe table: skipped")     \
  /* Scheduling records of the processes that served requests (the request tgids), filled in by Finish(). */ \
  /* A chain break is a sched_switch out of a thread that was off CPU by every earlier record (no */          \
  /* switch-in, no task-context record since it last left): its switch-in is missing from the capture, */    \
  /* and the run time since stays unaccounted. */                                                            \
  X(sched_switches, kInfo, "context switches of request processes")                                           \
  X(sched_chain_breaks, kDataLoss, "switch-outs of request threads whose switch-in is missing from the trace") \
  /* A task-context record of a thread the sched records left off CPU: it runs, so its switch-in was lost */ \
  /* (or predates the trace); it is taken as running from that record on. */                                 \
  X(sched_running_inferred, kDataLoss,                                                                        \
    "records of request threads running while off CPU by the sched records (switch-in lost)")                 \
  /* A task-context record of another thread on the CPU a thread was switched in on: that thread's */         \
  /* switch-out was lost (or tracing stopped first); its run is taken to end at its last record. */          \
  X(sched_switch_outs_lost, kDataLoss,                                                                        \
    "request threads found off CPU by another task's record on their CPU (switch-out lost)")                  \
  /* Run time the capture may have lost before those records (an upper bound, request processes only), */    \
  /* and the part of it charged (Options::infer_lost_switch_in; any process). */                             \
  X(cpu_lost_bound_ns, kDataLoss, "upper bound of request threads' run time lost with their switch-ins (ns)") \
  X(cpu_inferred_ns, kInfo, "run time charged from inferred switch-ins (ns)")                                 \
  /* A thread the sched records had on CPU, later found elsewhere, found off CPU by another task on its */    \
  /* CPU, or woken: its switch-out was lost, so its run after its last record is unknown, not charged. */     \
  X(cpu_unproven_ns, kDataLoss,                                                                               \
    "request threads' time on CPU by the sched records after their last record (switch-out lost): charged to none (ns)") \
  /* A charge that would break the invariants (an event's CPU within its thread's time since its previous */ \
  /* event in the request and since the request began, less its off-CPU time): the excess is dropped. */     \
  X(cpu_beyond_span_ns, kDataLoss, "task CPU beyond its thread's time within the request: dropped (ns)")      \
  X(events_cpu_clamped, kDataLoss, "events whose CPU was cut to their thread's time within the request")      \
  /* accounting (ns); the observed figures are filled in by Finish(). cpu_observed_ns: on-CPU time */         \
  /* (sched_switch) of the threads of request tgids while they served requests: from each process' first */   \
  /* seed event to the end of its last request that finished (Magpie's "during the course of the */          \
  /* experiment"; a server's start-up and shutdown are not request work, and dilute the ratio by the */      \
  /* length of the run). */                                                                                  \
  /* The CPU ledger (ProcessAccount, thread_tracker.h): every on-CPU ns of a request process is charged */      \
  /* once: cpu_observed_total_ns + cpu_irq_unapplied_ns = cpu_charged_ns + softirq_charged_ns + cpu_conn_ns */  \
  /* + softirq_conn_ns + cpu_unattributed_ns + cpu_outside_ns + cpu_unsampled_ns. cpu_observed_ns is the */   \
  /* right side less cpu_outside_ns and cpu_unsampled_ns: what the processes used from their first seed */    \
  /* to the end of their last request, on the connections recorded. */                                       \
  X(cpu_observed_ns, kInfo, "on-CPU time of request processes while they served requests (ns)")              \
  X(cpu_observed_total_ns, kInfo, "on-CPU time of request processes over the whole trace (ns)")              \
  X(cpu_charged_ns, kInfo, "on-CPU time charged to emitted requests (ns)")                                    \
  X(cpu_unattributed_ns, kInfo,                                                                               \
    "on-CPU time of request processes while serving charged to no request or connection (ns)")               \
  X(cpu_outside_ns, kInfo, "on-CPU time of request processes before their first request or after their last (ns)") \
  X(cpu_irq_unapplied_ns, kInfo, "interrupt time charged to events but not found in the interrupted task's run (ns)") \
  X(softirq_foreign_ns, kInfo,                                                                                \
    "interrupt time charged to requests or connections that ran on other processes' time (ns)")             \
  X(cpu_dropped_ns, kDataLoss, "run time of threads that blocked before a joined event: charged to none (ns)") \
  /* Head sampling (record --sample): calls left out of the sample, and their threads' run time up to the */  \
  /* last of them, which is no recorded request's (outside cpu_observed_ns). */                               \
  X(sample_gaps, kInfo, "runs of calls left out of the head sample")                                          \
  X(events_unsampled, kInfo, "calls left out of the head sample")                                             \
  X(cpu_unsampled_ns, kInfo, "run time of threads in connections left out of the head sample: charged to none (ns)") \
  X(softirq_charged_ns, kInfo, "interrupt time of request processes charged to emitted requests (ns)")        \
  /* The message rule (schemas with `messages`): exchanges and connection life (LANGUAGE.md). */            \
  X(msg_requests, kInfo, "message exchanges with bytes both ways (requests)")                                 \
  X(msg_one_way, kInfo, "inbound messages never answered (a connection's last): the connection's")            \
  X(msg_greetings, kInfo, "outbound messages before any inbound one: the connection's")                      \
  X(msg_setup, kInfo, "exchanges that open a connection (a greeting's answer, `setup N`, TLS): the connection's") \
  X(datagram_flows, kInfo, "peers of unconnected datagram sockets, each a flow of its own (dgram_peer)")      \
  X(msg_tls_handshakes, kInfo, "of those, TLS exchanges without application data (handshakes)")           \
  X(msg_pipelined, kInfo, "requests whose first read returned several client writes (flagged)")              \
  X(msg_eof_reads, kInfo, "socket reads that returned end-of-file: the connection's")                        \
  X(msg_empty_reads, kInfo, "socket reads that returned no data (EAGAIN): the connection's")                 \
  X(msg_drain_reads, kInfo, "socket reads with data after the server's shutdown() (lingering close): the connection's") \
  X(msg_idle_ns, kInfo, "time reads waited for the next message: connection idle time (ns)")                  \
  X(msg_packets_held, kInfo, "inbound data packets joined to the read that returned their bytes")            \
  X(msg_packets_unread, kInfo, "inbound data packets never read: charged to their connection")               \
  X(connections_reported, kInfo, "connections reported (their life is not a request)")                      \
  X(cpu_conn_ns, kInfo, "on-CPU time charged to connections' life (ns)")                                     \
  /* The call rule (schemas with `calls`): exchanges on connections a traced process opened. */              \
  X(calls_begun, kInfo, "calls: messages sent on connections a traced process opened")                       \
  X(calls_joined, kInfo, "exchanges of traced processes joined to the call that sent their bytes")           \
  X(calls_unanswered, kInfo, "calls that ended without an answer read")                                       \
  X(calls_overlapped, kDataLoss,                                                                               \
    "calls written on while another was unanswered (pipelined or multiplexed): flagged, not merged")        \
  X(softirq_conn_ns, kInfo, "interrupt time of request processes charged to connections' life (ns)")        \
  /* memory high-water marks */                                                                              \
  X(peak_live_sets, kInfo, "most event sets open at once")                                                    \
  X(peak_live_intervals, kInfo, "most valid-intervals open at once")                                          \
  X(peak_threads, kInfo, "most threads tracked at once")                                                      \
  X(peak_reorder_queued, kInfo, "most records held by the reorder window at once")
// clang-format on

struct Stats {
#define JDW_JOIN_STAT_FIELD(name, severity, description) uint64_t name = 0;
  JDW_JOIN_STATS(JDW_JOIN_STAT_FIELD)
#undef JDW_JOIN_STAT_FIELD
  // schema / trace mismatches worth telling the user about
  std::vector<std::string> warnings;
};

struct StatInfo {
  const char* name;
  Severity severity;
  const char* description;
  uint64_t Stats::*field;
};

inline constexpr StatInfo kStatsInfo[] = {
#define JDW_JOIN_STAT_INFO(name, severity, description) {#name, Severity::severity, description, &Stats::name},
    JDW_JOIN_STATS(JDW_JOIN_STAT_INFO)
#undef JDW_JOIN_STAT_INFO
};

// The share of the request processes' CPU, while they served requests,
// that the join accounted for: charged to requests or to their
// connections' life (which is the requests' too: Request::connection_cpu_ns
// apportions it). 0 when nothing was observed.
inline double AccountedCpuFraction(const Stats& st) {
  if (!st.cpu_observed_ns) return 0;
  return double(st.cpu_charged_ns + st.softirq_charged_ns + st.cpu_conn_ns + st.softirq_conn_ns) /
         double(st.cpu_observed_ns);
}

inline const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kDataLoss:
      return "data loss";
    case Severity::kError:
      return "error";
  }
  return "info";
}

}  // namespace jackdaw::join
