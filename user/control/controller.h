// The runtime controller of a capture session (SysProf's controller): what
// `jackdaw ctl` requests do to a running `jackdaw record` or `jackdaw live`.
//
//   status                     groups (state, attach mode, events, rate,
//                              losses), filters, memory, and whatever the
//                              session adds (pipeline delay, model)
//   list                       the probe groups and their state
//   enable GROUP | disable GROUP
//                              attach / detach the group's BPF links
//                              (CaptureSession::Enable/Disable): a disabled
//                              group costs nothing and emits nothing
//   filter syscalls LIST|all   the syscall bitmap in the control map,
//                              updated in place
//   filter pid PID             add a process to the tgid filter in place
//                              (sessions started with --pid)
//   filter pid -PID            take it out again (the process only: its
//                              descendants are tgids of their own)
//   snapshot FILE              the session's flight recorder to a .jdw
//   granularity [interaction|class] [--class-window S]
//                              the interact group's granularity
//                              (capture::InteractControl, no detach):
//                              one record per interaction, or sums per
//                              client class closed every S seconds (the
//                              last window is in `status`); no argument:
//                              the current setting
//
// Event counts per group are kept by the session's record sink through
// CountRecord() (or handed over whole, SetEvents()); rates are per second over the last completed Tick()
// interval. CountRecord() also keeps each group's newest record timestamp
// and every reply carries "received_ns", the session's CLOCK_MONOTONIC
// when it took the request: both on the records' clock, so how soon a
// group stopped after `disable` is read off the records themselves, not
// off a client's sleep. Not thread-safe: the session's main loop owns it.
#pragma once

#include <array>
#include <memory>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/interact.h"
#include "capture/session.h"
#include "common/status.h"

namespace jackdaw::control {

class Controller {
 public:
  struct Hooks {
    // `snapshot FILE`; unset: the session has no flight recorder.
    std::function<StatusOr<nlohmann::json>(const std::string& path)> snapshot;
    // Added to `status` (pipeline delay, model, ...).
    std::function<nlohmann::json()> status;
  };

  Controller(capture::CaptureBackend* session, Hooks hooks, bool tgid_filter);

  // Once per record on the session's hot path: a table lookup, no call.
  void CountRecord(const jdw_record_header& h) {
    if (h.type >= JDW_EVENT_MAX) return;
    const uint8_t g = group_of_[h.type];
    if (g >= JDW_GROUP_MAX) return;
    ++events_[g];
    if (h.ts > last_ts_[g]) last_ts_[g] = h.ts;
  }
  // For a session whose sink counts per group itself (record's writer):
  // the counts so far, instead of CountRecord().
  void SetEvents(const std::array<uint64_t, JDW_GROUP_MAX>& events) { events_ = events; }
  // Closes a rate interval when at least a second has passed.
  void Tick(uint64_t now_ns);

  StatusOr<nlohmann::json> Handle(const std::vector<std::string>& words);
  nlohmann::json Status() const;

  uint64_t events(uint32_t group) const { return events_[group]; }
  double rate(uint32_t group) const { return rate_[group]; }
  // lost[group], summed over CPUs.
  std::array<uint64_t, JDW_GROUP_MAX> Losses() const;
  // One line naming how many processes a traced parent forked that the
  // pid filter had no room for (they went untraced), and what to do; ""
  // while there are none.
  std::string FilterFullWarning() const;
  uint64_t PidsNotFollowed() const { return session_->PidsNotFollowed(); }

 private:
  capture::CaptureBackend* session_;
  Hooks hooks_;
  std::array<uint8_t, JDW_EVENT_MAX> group_of_{};  // record type -> group; JDW_GROUP_MAX: none
  bool tgid_filter_;
  std::array<uint64_t, JDW_GROUP_MAX> events_{}, events_at_tick_{}, last_ts_{};
  std::array<double, JDW_GROUP_MAX> rate_{};
  uint64_t tick_ns_ = 0;
  StatusOr<nlohmann::json> Dispatch(const std::vector<std::string>& words);
  StatusOr<nlohmann::json> FilterPid(const std::string& arg);
  StatusOr<nlohmann::json> Granularity(const std::vector<std::string>& words);
  nlohmann::json InteractStatus() const;
  void CloseClassWindow(uint64_t now_ns);

  std::string syscall_filter_ = "all";
  // The interact group's control, attached at the first `granularity`.
  std::unique_ptr<capture::InteractControl> interact_;
  uint64_t class_window_ns_ = 10'000'000'000;
  uint64_t class_window_start_ns_ = 0;
  nlohmann::json last_class_window_;
  std::vector<uint32_t> added_pids_, removed_pids_;
};

// Resident and peak resident memory of this process, bytes.
uint64_t ResidentBytes();
uint64_t PeakResidentBytes();

}  // namespace jackdaw::control
