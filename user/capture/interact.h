// InteractControl: the user side of the interact probe group (in-kernel
// SysProf interaction summaries, bpf/interact.bpf.c) on a running
// CaptureSession.
//
// Granularity is a control map the BPF programs read per event, so
// SetGranularity() switches between per-interaction records and per-class
// sums (or both) without detaching anything: it takes effect at the next
// interaction that completes.
//
// Class windows are double-buffered by an epoch bit carried in every class
// key. TakeWindow() flips the epoch, then reads and deletes the entries of
// the previous epoch: an update that raced with the flip (a program that
// read the old epoch just before it) lands in an entry of the old parity
// that is read one window later — late, never lost.
//
// Runtime control (jackdaw interactions, jackdaw ctl): SetGranularity() and
// SetWindow() may be called at any time on a running session; nothing is
// detached or reloaded. A granularity switch applies to every interaction
// completing after the call (the programs read the control map per event,
// so "within one window" holds for any window); a window change applies
// from the window in progress. ParseInteractGranularity() turns the
// command-line form into a granularity. InteractControl is not thread-safe:
// one thread (the session's poll loop) calls it.
//
// Idle eviction: a connection that never reaches TCP CLOSE (UDP, a socket
// that lingers) would hold its table slot; EvictIdle() deletes connections
// silent for longer than a limit and counts them. Connections the kernel
// could not insert (table full) are counted there (conns_full).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/session.h"
#include "common/status.h"
#include "jackdaw/interact.h"

namespace jackdaw::capture {

struct InteractGranularity {
  bool records = true;   // one jdw_interaction record per interaction
  bool classes = false;  // per-class sums over windows
  bool by_port = true;   // class key: server port (client: remote port)
  bool by_pid = true;    // class key: owning process
  uint8_t prefix4 = 32;  // remote IPv4 prefix bits kept in the key
  uint8_t prefix6 = 128;
  uint64_t cgroup_id = 0;  // 0: every cgroup
};

// "interaction" | "class" | "both", then optional comma-separated items:
// port | no-port | pid | no-pid | prefix4=N | prefix6=N (class key). Items
// not given keep their value in `base`. E.g. "class,prefix4=24,no-pid".
StatusOr<InteractGranularity> ParseInteractGranularity(const std::string& spec,
                                                       const InteractGranularity& base = {});

struct InteractClassRow {
  jdw_ia_class_key key{};
  jdw_ia_class_stats stats{};  // summed over CPUs
};

// One closed class window.
struct InteractWindow {
  uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
  std::vector<InteractClassRow> rows;
  double seconds() const { return double(end_ns - start_ns) / 1e9; }
};

struct InteractStats {
  uint64_t counters[JDW_IA_STAT_MAX] = {};  // summed over CPUs
  uint64_t evicted = 0;                     // by EvictIdle
  uint64_t ring_lost = 0;                   // jdw_lost of the group
  // What this control copied out of the kernel's maps, for the benchmark's
  // "what reaches user space": class rows taken and their bytes (keys
  // walked, and each row's per-CPU values: the kernel copies every
  // possible CPU's), and the idle sweep's bytes (keys and connection
  // values). The ring's records are the session's to count.
  uint64_t class_rows = 0;
  uint64_t class_bytes = 0;
  uint64_t sweep_bytes = 0;
};

class InteractControl {
 public:
  // The session must have loaded the interact group.
  static StatusOr<std::unique_ptr<InteractControl>> Attach(CaptureSession& session);

  // Records and/or classes, the class key, the cgroup filter. An invalid
  // granularity (neither records nor classes) is refused and the previous
  // one stays in force.
  Status SetGranularity(const InteractGranularity& g);
  const InteractGranularity& granularity() const { return granularity_; }

  // Length of a class window (default 1 s; at least 1 ms).
  Status SetWindow(uint64_t window_ns);
  uint64_t window_ns() const { return window_ns_; }

  // Closes the class window once window_ns() has passed since the last one
  // closed (or since Attach): its rows, CPUs summed; nullopt when not due.
  // Call it from the poll loop, at least every few hundred ms.
  StatusOr<std::optional<InteractWindow>> PollWindow(uint64_t now_ns);
  // Closes the window in progress now, due or not (e.g. at the end of a run).
  StatusOr<InteractWindow> CloseWindow(uint64_t now_ns);

  // Closes the current class window now: its rows, CPUs summed.
  StatusOr<std::vector<InteractClassRow>> TakeWindow();

  // Deletes connections idle for more than idle_ns; returns how many.
  StatusOr<uint64_t> EvictIdle(uint64_t idle_ns);

  // Connections held now.
  uint64_t ConnectionCount() const;

  InteractStats ReadStats() const;

 private:
  InteractControl(CaptureSession& s) : session_(s) {}
  Status WriteControl();

  CaptureSession& session_;
  InteractGranularity granularity_;
  uint8_t epoch_ = 0;
  uint64_t window_ns_ = 1'000'000'000;
  uint64_t window_start_ns_ = 0;
  int control_fd_ = -1, classes_fd_ = -1, conns_fd_ = -1, stats_fd_ = -1;
  uint32_t conn_value_size_ = 0;
  uint64_t evicted_ = 0;
  uint64_t class_rows_ = 0, class_bytes_ = 0, sweep_bytes_ = 0;
};

// Whether this kernel has the hooks the interact group cannot do without.
// The socket tracepoints it follows messages with (sock_recv_length,
// sock_send_length, sk_data_ready) are recent: Linux 6.1, Debian 12's
// kernel, has none of them, and loading the group there fails deep in
// libbpf. This decides beforehand, from `has_tracepoint` (true when the
// kernel's BTF carries btf_trace_<name>, the type a tp_btf program attaches
// through): OK, or one line naming the missing tracepoints, the kernel
// (`release`) and the fix. Optional hooks (block_io_start) are not asked.
Status CheckInteractHooks(const std::function<bool(const char*)>& has_tracepoint, const std::string& release);
// The same against the running kernel's BTF (/sys/kernel/btf/vmlinux); a
// kernel without BTF is refused in one line too.
Status CheckInteractKernel();

// Name of a JDW_IA_STAT_* counter, and its description.
const char* InteractStatName(uint32_t id);
const char* InteractStatDescription(uint32_t id);

}  // namespace jackdaw::capture
