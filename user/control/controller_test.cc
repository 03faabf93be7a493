// The controller's request handling on a backend that records what it is
// asked (the eBPF side is exercised by tests/live): filter pid add and
// remove, the receipt instant on every reply, each group's newest record.
#include "control/controller.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/clock.h"
#include "trace/event_table.h"

namespace jackdaw::control {
namespace {

class RecordingBackend : public capture::CaptureBackend {
 public:
  const char* name() const override { return "test"; }
  trace::Timebase timebase() const override { return trace::Timebase::kMonoNs; }
  const char* clock_source() const override { return "test"; }
  uint32_t ncpus() const override { return 1; }
  uint32_t available_groups() const override { return (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL); }
  uint32_t enabled_groups() const override { return enabled; }
  const std::string& attach_mode(uint32_t) const override { return mode_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }
  Status Enable(uint32_t g) override { return enabled |= 1u << g, Status::Ok(); }
  Status Disable(uint32_t g) override { return enabled &= ~(1u << g), Status::Ok(); }
  Status EnableAll() override { return Status::Ok(); }
  void DisableAll() override {}
  Status AddTgid(uint32_t tgid) override { return tgids.push_back(tgid), Status::Ok(); }
  Status RemoveTgid(uint32_t tgid) override {
    auto it = std::find(tgids.begin(), tgids.end(), tgid);
    if (it == tgids.end()) return ErrStatus("pid %u is not in this session's filter", tgid);
    tgids.erase(it);
    return Status::Ok();
  }
  Status SetSyscallFilter(const std::vector<int>&) override { return Status::Ok(); }
  StatusOr<int> Poll(capture::RecordSink&, int) override { return 0; }
  StatusOr<int> Drain(capture::RecordSink&) override { return 0; }
  std::vector<std::vector<uint64_t>> ReadLosses() const override { return losses; }
  uint64_t PidsNotFollowed() const override { return not_followed; }

  uint32_t enabled = available_groups();
  std::vector<uint32_t> tgids;
  uint64_t not_followed = 0;
  std::vector<std::vector<uint64_t>> losses{std::vector<uint64_t>(JDW_GROUP_MAX, 0)};

 private:
  std::string mode_ = "tp_btf";
  std::vector<std::string> warnings_;
};

TEST(Controller, FilterPidAddsAndRemoves) {
  RecordingBackend b;
  Controller c(&b, {}, /*tgid_filter=*/true);
  auto r = c.Handle({"filter", "pid", "123"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(b.tgids, std::vector<uint32_t>({123}));
  r = c.Handle({"filter", "pid", "-123"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(b.tgids.empty());
  EXPECT_EQ((*r)["pids_removed"], nlohmann::json::array({123}));
  EXPECT_EQ((*r)["pids_added"], nlohmann::json::array());
  EXPECT_EQ(c.Status()["filters"]["pids_removed"], nlohmann::json::array({123}));
  // Not in the filter: the backend's refusal is the reply.
  r = c.Handle({"filter", "pid", "-77"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not in this session's filter"), std::string::npos);
  for (const char* bad : {"-", "--5", "-0", "0", "12x", "+", " 5", "-x", "99999999999"}) {
    r = c.Handle({"filter", "pid", bad});
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_TRUE(b.tgids.empty());
}

// The children a full pid filter turned away are in `status`, with the
// warning that says what to do; none, no warning.
TEST(Controller, StatusWarnsOfProcessesTheFullPidFilterTurnedAway) {
  RecordingBackend b;
  Controller c(&b, {}, true);
  EXPECT_EQ(c.Status()["filters"]["pids_not_followed"], 0);
  EXPECT_FALSE(c.Status().contains("warnings"));
  b.not_followed = 7;
  const nlohmann::json st = c.Status();
  EXPECT_EQ(st["filters"]["pids_not_followed"], 7);
  ASSERT_EQ(st["warnings"].size(), 1u);
  const std::string w = st["warnings"][0];
  EXPECT_NE(w.find("7 processes"), std::string::npos) << w;
  EXPECT_NE(w.find("pid filter was full"), std::string::npos) << w;
}

TEST(Controller, FilterPidNeedsATgidFilteredSession) {
  RecordingBackend b;
  Controller c(&b, {}, /*tgid_filter=*/false);
  EXPECT_FALSE(c.Handle({"filter", "pid", "-5"}).ok());
  EXPECT_FALSE(c.Handle({"filter", "pid", "5"}).ok());
}

// Issue 30: `snapshot rel.jdw` was written in the session's directory.
TEST(Controller, SnapshotRefusesARelativePath) {
  RecordingBackend b;
  std::vector<std::string> written;
  Controller::Hooks hooks;
  hooks.snapshot = [&](const std::string& path) -> StatusOr<nlohmann::json> {
    written.push_back(path);
    return nlohmann::json{{"snapshot", path}};
  };
  Controller c(&b, hooks, /*tgid_filter=*/false);
  auto r = c.Handle({"snapshot", "rel.jdw"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("absolute path"), std::string::npos) << r.status().message();
  r = c.Handle({"snapshot", "/tmp/with space.jdw"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(written, std::vector<std::string>({"/tmp/with space.jdw"}));
}

// The loss as a share of every event the probes produced, summed over the
// groups and CPUs, as the closing lines state it.
TEST(Controller, StatusStatesTheLossAsAShareOfEvents) {
  RecordingBackend b;
  Controller c(&b, {}, true);
  EXPECT_EQ(c.Status()["lost_percent"], 0.0);
  jdw_record_header h{};
  h.type = JDW_EVENT_SYS_ENTER;
  for (int i = 0; i < 60; ++i) c.CountRecord(h);
  h.type = JDW_EVENT_SCHED_SWITCH;
  for (int i = 0; i < 15; ++i) c.CountRecord(h);
  b.losses = {std::vector<uint64_t>(JDW_GROUP_MAX, 0), std::vector<uint64_t>(JDW_GROUP_MAX, 0)};
  b.losses[0][JDW_GROUP_SYSCALL] = 20;
  b.losses[1][JDW_GROUP_SCHED] = 5;
  const nlohmann::json st = c.Status();
  EXPECT_EQ(st["events"], 75);
  EXPECT_EQ(st["lost"], 25);
  EXPECT_DOUBLE_EQ(st["lost_percent"].get<double>(), 25.0);
}

TEST(Controller, RepliesCarryTheReceiptInstantAndGroupsTheirNewestRecord) {
  RecordingBackend b;
  Controller c(&b, {}, true);
  jdw_record_header h{};
  h.type = JDW_EVENT_SYS_ENTER;
  h.ts = 5000;
  c.CountRecord(h);
  h.ts = 4000;  // another CPU's older record, drained later
  c.CountRecord(h);
  h.type = JDW_EVENT_SCHED_SWITCH;
  h.ts = 7000;
  c.CountRecord(h);
  const uint64_t before = MonotonicNs();
  auto r = c.Handle({"disable", "syscall"});
  const uint64_t after = MonotonicNs();
  ASSERT_TRUE(r.ok());
  EXPECT_GE((*r)["received_ns"].get<uint64_t>(), before);
  EXPECT_LE((*r)["received_ns"].get<uint64_t>(), after);
  EXPECT_FALSE(b.enabled & (1u << JDW_GROUP_SYSCALL));
  const nlohmann::json st = c.Status();
  for (const auto& g : st["groups"]) {
    if (g["group"] == "syscall") {
      EXPECT_EQ(g["events"], 2);
      EXPECT_EQ(g["last_event_ns"], 5000);
      EXPECT_FALSE(g["enabled"].get<bool>());
    }
    if (g["group"] == "sched") {
      EXPECT_EQ(g["last_event_ns"], 7000);
    }
    if (g["group"] == "block") {
      EXPECT_EQ(g["last_event_ns"], 0);
    }
  }
  // Errors carry no instant (they are not a JSON object of the handler).
  EXPECT_FALSE(c.Handle({"enable", "nosuch"}).ok());
}

}  // namespace
}  // namespace jackdaw::control
