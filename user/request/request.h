// The hand-off between request extraction (user/join) and everything after
// it (user/canonical, user/cluster, user/model, user/report). It lives below
// every stage (user/request/) so that none of them includes a later one. The
// types keep the jackdaw::model namespace: they are the workload model's
// input, and renaming them would touch every stage for no behaviour.
//
// A Request is one connected set of events that the temporal join emitted
// because it held a seed event (Magpie §3). Its events are in timestamp
// order; resources are already charged to events (each event carries what
// its thread consumed since the thread's previous event in this request), so
// later stages never need the raw trace.
//
// This header is a contract between two stages: extend it only by adding
// fields with defaults.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "request/symbol.h"

namespace jackdaw::model {

// Where a thread's off-CPU time went, where the kernel told us.
enum class BlockReason : uint8_t { kNone, kDisk, kNetwork, kFutex, kPipe, kOther };

// Synthetic events the join inserts (Magpie's SYNC/WAIT and block start).
enum class SyntheticKind : uint8_t {
  kNone,      // a real record from the trace
  kSignal,    // SYNC source / waker side of a sched_wakeup
  kResume,    // SYNC destination / wakee side
  kWait,      // WAIT(event): the thread blocks here
  kIoStart,   // synthetic start of a block request reported at completion
};

struct RequestEvent {
  uint64_t ts_ns = 0;          // CLOCK_MONOTONIC ns
  uint64_t tsc = 0;            // TSC cycles (same instant)
  uint32_t tid = 0;
  uint32_t tgid = 0;           // its thread's process (0 for interrupt work)
  uint16_t cpu = 0;
  uint16_t record_type = 0;    // enum jdw_event_type, 0 for synthetic
  SyntheticKind synthetic = SyntheticKind::kNone;
  // Stable symbol naming what happened, independent of ids and timing:
  // "sys_enter:read", "usdt:jackdaw_ts:request_start", "signal", "wait",
  // "block_complete:read". Clustering compares these. Interned (see
  // symbol.h): reads like a std::string, copies like a pointer.
  Symbol symbol;
  // Resources charged to this event: consumed by its thread since the
  // thread's previous event in this request.
  uint64_t cpu_ns = 0;
  uint64_t disk_bytes = 0;
  uint64_t net_bytes = 0;
};

// How the join learned of a causal edge.
enum class EdgeKind : uint8_t {
  // A schema's SYNC: both ends are events the program always emits, so the
  // edge is there whether or not either thread had to wait.
  kSync,
  // A kernel wake-up (sched_wakeup waker -> the wakee's switch-in): seen
  // only because the target thread was asleep when the source released it.
  // Had the target not needed to sleep (its condition already true, or a
  // pool thread still busy and taking the work from a queue later), the
  // same synchronization leaves no edge (canonical/canonical.h).
  kWakeup,
};

// A causal edge between two events of the same request (indices into
// Request::events): a SYNC Signal→Resume or a sched_wakeup waker→wakee.
struct CausalEdge {
  uint32_t from = 0;
  uint32_t to = 0;
  EdgeKind kind = EdgeKind::kSync;
};

struct Endpoint {
  // {local, remote}, as every IP endpoint is written.
  Endpoint() = default;
  Endpoint(std::string l, std::string r) : local(std::move(l)), remote(std::move(r)) {}

  std::string local;   // "127.0.0.1:8080"; a unix socket "unix:/run/php/php-fpm.sock", unnamed "unix:"
  std::string remote;  // "127.0.0.1:45678"
  // A unix socket's peer process (the one holding the other end where the
  // trace saw it, else SO_PEERCRED's) and its name where the trace has it;
  // 0 for IP connections, whose peer is their remote address.
  uint32_t peer_tgid = 0;
  std::string peer_comm;
};

struct ResourceTotals {
  uint64_t cpu_ns = 0;         // on-CPU, all threads, task context
  uint64_t softirq_cpu_ns = 0; // interrupt work joined via packet/IO attributes
  uint64_t disk_bytes = 0;
  uint64_t disk_ios = 0;
  uint64_t net_bytes_in = 0;
  uint64_t net_bytes_out = 0;
  uint64_t runq_wait_ns = 0;   // runnable but not running
  uint64_t blocked_ns = 0;     // all blocked time; split below
  uint64_t blocked_disk_ns = 0;
  uint64_t blocked_net_ns = 0;
  uint64_t blocked_futex_ns = 0;
  uint64_t blocked_other_ns = 0;
  uint64_t blocked_pipe_ns = 0;  // added by join: BlockReason::kPipe
};

// A process's part in a request (Magpie's request across components: a
// proxy, the app server behind it, the database it calls). The segments of
// one request are disjoint in events; their sums are the request's totals
// (connection_cpu_ns aside, which is the front connection's).
struct ProcessSegment {
  uint32_t tgid = 0;
  std::string comm;                 // the process's name where the trace named it
  uint32_t tier = 0;                // 0: the process the request arrived at; n: n calls away
  uint64_t first_ns = 0, last_ns = 0;  // its first and last event in the request
  uint32_t events = 0;
  uint32_t threads = 0;
  uint64_t cpu_ns = 0;              // task CPU of its threads
  uint64_t softirq_cpu_ns = 0;      // packet work joined to its events
  uint64_t disk_bytes = 0, disk_ios = 0;
  uint64_t net_bytes_in = 0, net_bytes_out = 0;
  uint64_t runq_wait_ns = 0, blocked_ns = 0;
};

// A message the request's threads sent on a connection they opened (a
// backend, a cache, a database; loopback, a unix socket or across the
// wire) and the answer they read back: the call's exchange. When the peer's
// process is in the trace its work for the exchange is part of the request
// (`peer_tgid`); otherwise the call is remote, and `jackdaw stitch` joins it
// to the far side's trace by its endpoint and TCP sequence ranges.
struct Call {
  uint64_t start_ns = 0;            // its first outbound byte (the write that began it)
  uint64_t end_ns = 0;              // the last byte of the answer read (start_ns if none)
  uint32_t caller_tgid = 0, caller_tid = 0;
  uint32_t peer_tgid = 0;           // the traced process that served it, 0 = remote
  Endpoint endpoint;                // local = the caller's end
  uint64_t bytes_out = 0, bytes_in = 0;
  uint32_t seq_out_start = 0, seq_out_end = 0;  // TCP sequence range of the outbound message, where packets were seen
  bool answered = false;            // bytes came back
  // Another request's thread wrote on the connection while this call was
  // unanswered (pipelining, multiplexing): its messages could not be told
  // apart by the connection alone; counted, never merged.
  bool overlapped = false;
  uint32_t index = 0;               // the call's number on its connection (0 = first seen)
};

struct Request {
  uint64_t id = 0;
  uint64_t start_ns = 0, end_ns = 0;      // CLOCK_MONOTONIC
  uint64_t start_tsc = 0, end_tsc = 0;
  uint64_t start_wall_ns = 0, end_wall_ns = 0;  // CLOCK_REALTIME
  uint32_t tgid = 0;
  std::vector<uint32_t> threads;          // in order of first appearance
  std::vector<Endpoint> connections;
  std::vector<RequestEvent> events;       // timestamp order
  std::vector<CausalEdge> edges;
  ResourceTotals totals;
  // Closed by the GC timeout or by the end of the trace while some of its
  // valid-intervals were still open (so it may be missing its tail).
  bool timed_out = false;
  // The capture lost records its join needs (a loss interval of a probe
  // group the schema uses, on a CPU its threads ran on, within its span):
  // it may lack events or resources. Reported and counted, kept out of
  // clusters, anomalies and the model's totals.
  bool incomplete = false;
  std::string incomplete_reason;  // "sched records lost on cpu 1"
  // The message exchange the request is (schemas with `messages`; see
  // Connection below): its connection's id, its index on that connection
  // (0 = the connection's first request), the payload bytes of the inbound
  // and outbound message as the server read and wrote them, and whether
  // the read that began it returned several client writes at once
  // (pipelined requests the bytes could not separate).
  bool has_message = false;
  uint64_t connection_id = 0;
  uint32_t exchange = 0;
  uint64_t msg_in_bytes = 0, msg_out_bytes = 0;
  bool pipelined = false;
  // Requests across processes: each process's part (in order of first
  // event; processes[0] is where the request arrived) and the calls its
  // threads made on connections they opened.
  std::vector<ProcessSegment> processes;
  std::vector<Call> calls;
  // The request's share of its front connection's life (accept, handshake,
  // idle reads, close), apportioned when the exchange ends: the connection's
  // CPU not yet given to an earlier request of it. Not in totals.cpu_ns, so
  // the request's own work stays comparable across connection policies.
  uint64_t connection_cpu_ns = 0;

  uint64_t latency_ns() const { return end_ns - start_ns; }
};

// A connection's life, as the message rule charges it (schemas with
// `messages`; user/schemas/LANGUAGE.md, "Messages and interactions"): what
// the connection did that is not a request — the accept, reads that returned
// end-of-file or no data, the close, a greeting, a last message without an
// answer, packets outside any exchange — and how many requests it carried.
// Reported once per connection, when it closes or the trace ends.
struct Connection {
  uint64_t id = 0;          // Request::connection_id of its requests
  uint32_t tgid = 0;        // the serving process (0 if no task event named it)
  Endpoint endpoint;        // empty when no sock_info described it
  uint64_t start_ns = 0;    // first event seen on it (accept, else first use)
  uint64_t end_ns = 0;      // its close, else its last event
  bool closed = false;      // false: still open at the end of the trace
  uint32_t requests = 0;    // exchanges with bytes both ways
  uint32_t one_way = 0;     // inbound messages never answered (a goodbye)
  uint32_t greetings = 0;   // outbound before any inbound message
  uint32_t setups = 0;      // exchanges opening it (a greeting's answer, a schema's `setup N`)
  uint32_t pipelined = 0;   // requests flagged pipelined
  uint32_t eof_reads = 0, empty_reads = 0;
  uint32_t events = 0;      // syscalls and packets charged to the connection
  uint64_t idle_ns = 0;     // reads waiting for the next message
  uint64_t cpu_ns = 0;      // task CPU of those events
  uint64_t softirq_cpu_ns = 0;
  uint64_t net_bytes_in = 0, net_bytes_out = 0;  // packets outside any exchange
};

}  // namespace jackdaw::model
