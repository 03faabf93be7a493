#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "join/extractor.h"

namespace jackdaw::join {
namespace {

model::Request SampleRequest() {
  model::Request r;
  r.id = 7;
  r.tgid = 1000;
  r.start_ns = 100;
  r.end_ns = 600;
  r.start_tsc = 250;
  r.end_tsc = 1500;
  r.start_wall_ns = 1'700'000'000'000'000'100;
  r.end_wall_ns = 1'700'000'000'000'000'600;
  r.threads = {10, 11};
  r.connections.push_back({"127.0.0.1:8080", "127.0.0.1:5555"});
  model::RequestEvent a;
  a.ts_ns = 100;
  a.tsc = 250;
  a.tid = 10;
  a.record_type = JDW_EVENT_USDT;
  a.symbol = "usdt:app:begin";
  a.cpu_ns = 42;
  model::RequestEvent sig;
  sig.ts_ns = 100;
  sig.tid = 10;
  sig.synthetic = model::SyntheticKind::kSignal;
  sig.symbol = "signal";
  model::RequestEvent res = sig;
  res.ts_ns = 600;
  res.tid = 11;
  res.synthetic = model::SyntheticKind::kResume;
  res.symbol = "resume";
  r.events = {a, sig, res};
  r.edges.push_back({1, 2});
  r.totals.cpu_ns = 42;
  r.totals.net_bytes_out = 200;
  r.totals.blocked_ns = 30;
  r.totals.blocked_futex_ns = 30;
  return r;
}

TEST(RequestWriter, OneJsonObjectPerLine) {
  std::string out;
  WriteRequestJson(&out, SampleRequest());
  ASSERT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["latency_ns"], 500);
  EXPECT_EQ(j["start_tsc"], 250);
  EXPECT_EQ(j["end_wall_ns"], 1'700'000'000'000'000'600ULL);
  EXPECT_EQ(j["threads"], nlohmann::json::array({10, 11}));
  EXPECT_EQ(j["connections"][0]["remote"], "127.0.0.1:5555");
  EXPECT_EQ(j["totals"]["cpu_ns"], 42);
  EXPECT_EQ(j["totals"]["blocked"]["futex"], 30);
  EXPECT_EQ(j["totals"]["net_bytes_out"], 200);
  ASSERT_EQ(j["events"].size(), 3u);
  EXPECT_EQ(j["events"][0]["symbol"], "usdt:app:begin");
  EXPECT_EQ(j["events"][0]["cpu_ns"], 42);
  EXPECT_FALSE(j["events"][0].contains("synthetic"));
  EXPECT_EQ(j["events"][1]["synthetic"], "signal");
  EXPECT_FALSE(j["events"][1].contains("cpu_ns"));
  EXPECT_EQ(j["edges"], nlohmann::json::array({nlohmann::json::array({1, 2})}));
  EXPECT_FALSE(j["timed_out"]);
  EXPECT_FALSE(j.contains("incomplete"));  // complete requests: the line as before
}

// The line as a nlohmann::json tree dumps it (the writer's former
// implementation): the hand-written writer must give these bytes exactly.
std::string TreeLine(const model::Request& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["tgid"] = r.tgid;
  j["start_ns"] = r.start_ns;
  j["end_ns"] = r.end_ns;
  j["latency_ns"] = r.latency_ns();
  j["start_tsc"] = r.start_tsc;
  j["end_tsc"] = r.end_tsc;
  j["start_wall_ns"] = r.start_wall_ns;
  j["end_wall_ns"] = r.end_wall_ns;
  j["timed_out"] = r.timed_out;
  if (r.incomplete) {
    j["incomplete"] = true;
    j["incomplete_reason"] = r.incomplete_reason;
  }
  j["threads"] = r.threads;
  if (r.has_message)
    j["message"] = {{"connection", r.connection_id},
                    {"exchange", r.exchange},
                    {"in_bytes", r.msg_in_bytes},
                    {"out_bytes", r.msg_out_bytes},
                    {"pipelined", r.pipelined}};
  auto& conns = j["connections"] = nlohmann::json::array();
  for (const model::Endpoint& e : r.connections) conns.push_back({{"local", e.local}, {"remote", e.remote}});
  const model::ResourceTotals& t = r.totals;
  j["totals"] = {{"cpu_ns", t.cpu_ns},          {"softirq_cpu_ns", t.softirq_cpu_ns}, {"disk_bytes", t.disk_bytes},
                 {"disk_ios", t.disk_ios},      {"net_bytes_in", t.net_bytes_in},     {"net_bytes_out", t.net_bytes_out},
                 {"runq_wait_ns", t.runq_wait_ns}, {"blocked_ns", t.blocked_ns},
                 {"blocked",
                  {{"disk", t.blocked_disk_ns},
                   {"net", t.blocked_net_ns},
                   {"futex", t.blocked_futex_ns},
                   {"pipe", t.blocked_pipe_ns},
                   {"other", t.blocked_other_ns}}}};
  const char* names[] = {nullptr, "signal", "resume", "wait", "io_start"};
  auto& evs = j["events"] = nlohmann::json::array();
  for (const model::RequestEvent& e : r.events) {
    nlohmann::json ev = {{"ts_ns", e.ts_ns}, {"tsc", e.tsc}, {"tid", e.tid},
                         {"cpu", e.cpu},     {"type", e.record_type}, {"symbol", e.symbol}};
    const char* syn = nullptr;
    if (e.synthetic == model::SyntheticKind::kSignal) syn = names[1];
    if (e.synthetic == model::SyntheticKind::kResume) syn = names[2];
    if (e.synthetic == model::SyntheticKind::kWait) syn = names[3];
    if (e.synthetic == model::SyntheticKind::kIoStart) syn = names[4];
    if (syn) ev["synthetic"] = syn;
    if (e.cpu_ns) ev["cpu_ns"] = e.cpu_ns;
    if (e.disk_bytes) ev["disk_bytes"] = e.disk_bytes;
    if (e.net_bytes) ev["net_bytes"] = e.net_bytes;
    evs.push_back(std::move(ev));
  }
  auto& edges = j["edges"] = nlohmann::json::array();
  for (const model::CausalEdge& e : r.edges) {
    if (e.kind == model::EdgeKind::kWakeup) edges.push_back({e.from, e.to, "wakeup"});
    else edges.push_back({e.from, e.to});
  }
  auto& procs = j["processes"] = nlohmann::json::array();
  for (const model::ProcessSegment& p : r.processes)
    procs.push_back({{"tgid", p.tgid},         {"comm", p.comm},
                     {"tier", p.tier},         {"first_ns", p.first_ns},
                     {"last_ns", p.last_ns},   {"events", p.events},
                     {"threads", p.threads},   {"cpu_ns", p.cpu_ns},
                     {"softirq_cpu_ns", p.softirq_cpu_ns}, {"disk_bytes", p.disk_bytes},
                     {"disk_ios", p.disk_ios}, {"net_bytes_in", p.net_bytes_in},
                     {"net_bytes_out", p.net_bytes_out}, {"runq_wait_ns", p.runq_wait_ns},
                     {"blocked_ns", p.blocked_ns}});
  auto& calls = j["calls"] = nlohmann::json::array();
  for (const model::Call& c : r.calls)
    calls.push_back({{"start_ns", c.start_ns},       {"end_ns", c.end_ns},
                     {"caller_tgid", c.caller_tgid}, {"caller_tid", c.caller_tid},
                     {"peer_tgid", c.peer_tgid},     {"local", c.endpoint.local},
                     {"remote", c.endpoint.remote},  {"bytes_out", c.bytes_out},
                     {"bytes_in", c.bytes_in},       {"seq_out_start", c.seq_out_start},
                     {"seq_out_end", c.seq_out_end}, {"answered", c.answered},
                     {"overlapped", c.overlapped},   {"index", c.index}});
  j["connection_cpu_ns"] = r.connection_cpu_ns;
  return j.dump() + "\n";
}

TEST(RequestWriter, BytesAreThoseOfTheJsonTree) {
  std::vector<model::Request> cases;
  cases.push_back(SampleRequest());
  model::Request empty;
  cases.push_back(empty);
  model::Request r = SampleRequest();
  r.timed_out = true;
  r.incomplete = true;
  r.incomplete_reason = "records lost on cpu 1 while it ran";
  r.has_message = true;
  r.connection_id = 3;
  r.exchange = 2;
  r.msg_in_bytes = 77;
  r.msg_out_bytes = 5000;
  r.pipelined = true;
  r.edges.push_back({0, 2, model::EdgeKind::kWakeup});
  r.end_ns = 50;  // an inverted span: latency wraps as the tree's uint64 did
  r.end_wall_ns = UINT64_MAX;
  r.connections.push_back({"[::1]:80", "quote\"back\\slash\ttab\x01" "ctl\x7f"});
  model::RequestEvent e;
  e.ts_ns = UINT64_MAX;
  e.tsc = 1;
  e.tid = UINT32_MAX;
  e.cpu = 65535;
  e.record_type = 65535;
  e.disk_bytes = 4096;
  e.net_bytes = 1;
  e.symbol = "sys_enter:caf\xc3\xa9 \"x\"";
  for (auto k : {model::SyntheticKind::kWait, model::SyntheticKind::kIoStart, model::SyntheticKind::kNone}) {
    e.synthetic = k;
    r.events.push_back(e);
  }
  r.totals = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  r.threads.clear();
  r.processes.push_back({42, "nginx", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  r.processes.push_back({43, "php-fpm\"7", 1, UINT64_MAX, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  model::Call call;
  call.start_ns = 5;
  call.end_ns = UINT64_MAX;
  call.caller_tgid = 42;
  call.caller_tid = 44;
  call.peer_tgid = 43;
  call.endpoint = {"127.0.0.1:45000", "127.0.0.1:9000"};
  call.bytes_out = 100;
  call.bytes_in = 2000;
  call.seq_out_start = UINT32_MAX;
  call.seq_out_end = 99;
  call.answered = true;
  call.overlapped = true;
  call.index = 7;
  r.calls.push_back(call);
  r.calls.push_back(model::Call{});
  r.connection_cpu_ns = 12345;
  cases.push_back(r);
  for (const auto& c : cases) {
    std::string out = "prefix";
    WriteRequestJson(&out, c);
    EXPECT_EQ(out, "prefix" + TreeLine(c));
  }
}

TEST(RequestWriter, ConnectionBytesAreThoseOfTheOrderedJsonTree) {
  model::Connection c;
  c.id = 3;
  c.tgid = 42;
  c.endpoint = {"127.0.0.1:8080", "caf\xc3\xa9\"\\"};
  c.start_ns = 1;
  c.end_ns = UINT64_MAX;
  c.closed = true;
  c.requests = 2;
  c.one_way = 3;
  c.greetings = 4;
  c.setups = 5;
  c.pipelined = 6;
  c.eof_reads = 7;
  c.empty_reads = UINT32_MAX;
  c.events = 9;
  c.idle_ns = 10;
  c.cpu_ns = 11;
  c.softirq_cpu_ns = 12;
  c.net_bytes_in = 13;
  c.net_bytes_out = 14;
  for (const model::Connection& x : {c, model::Connection{}}) {
    const nlohmann::ordered_json tree = {{"type", "connection"},   {"id", x.id},
                                         {"tgid", x.tgid},         {"local", x.endpoint.local},
                                         {"remote", x.endpoint.remote}, {"start_ns", x.start_ns},
                                         {"end_ns", x.end_ns},     {"closed", x.closed},
                                         {"requests", x.requests}, {"one_way", x.one_way},
                                         {"greetings", x.greetings}, {"setups", x.setups},
                                         {"pipelined", x.pipelined},
                                         {"eof_reads", x.eof_reads}, {"empty_reads", x.empty_reads},
                                         {"events", x.events},     {"idle_ns", x.idle_ns},
                                         {"cpu_ns", x.cpu_ns},     {"softirq_cpu_ns", x.softirq_cpu_ns},
                                         {"net_bytes_in", x.net_bytes_in}, {"net_bytes_out", x.net_bytes_out}};
    std::string out;
    WriteConnectionJson(&out, x);
    EXPECT_EQ(out, tree.dump() + "\n");
  }
}

TEST(RequestWriter, LogLikelihoodIsTheLastKeyOfTheLine) {
  std::string line;
  WriteRequestJson(&line, SampleRequest());
  const nlohmann::json before = nlohmann::json::parse(line);
  AppendLogLikelihood(&line, -0.125);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
  const std::string tail = ",\"log_likelihood\":-0.125}\n";
  ASSERT_GE(line.size(), tail.size());
  EXPECT_EQ(line.substr(line.size() - tail.size()), tail);
  nlohmann::json after = nlohmann::json::parse(line);
  EXPECT_DOUBLE_EQ(after["log_likelihood"].get<double>(), -0.125);
  after.erase("log_likelihood");
  EXPECT_EQ(after, before);  // nothing else changed
}

TEST(RequestWriter, MarksWakeupEdges) {
  model::Request r = SampleRequest();
  r.edges[0].kind = model::EdgeKind::kWakeup;
  std::string out;
  WriteRequestJson(&out, r);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["edges"], nlohmann::json::array({nlohmann::json::array({1, 2, "wakeup"})}));
}

TEST(RequestWriter, WritesFileAndReportsErrors) {
  const std::string path = ::testing::TempDir() + "/jdw_requests.jsonl";
  ASSERT_TRUE(WriteRequestsJsonl(path, {SampleRequest(), SampleRequest()}).ok());
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["id"], 7);
    n++;
  }
  EXPECT_EQ(n, 2);
  Status bad = WriteRequestsJsonl("/nonexistent-dir/x.jsonl", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("cannot create /nonexistent-dir/x.jsonl: No such file or directory"), std::string::npos);
}

TEST(RequestWriter, SummaryLine) {
  Stats s;
  s.requests_emitted = 500;
  s.events_joined = 18000;
  s.events_in_requests = 17500;
  s.events_discarded = 500;
  s.late_records = 3;
  s.cpu_observed_ns = 280'000'000;
  s.cpu_charged_ns = 270'000'000;
  s.cpu_conn_ns = 6'600'000;
  s.cpu_unattributed_ns = 3'400'000;  // charged to no request or connection
  EXPECT_EQ(FormatSummary(s),
            "requests 500 (timed out 0), events joined 18000 (in requests 17500, discarded 500), late records 3, "
            "unattributed cpu 1.2% (3.400 ms of 280.000 ms)");
  // Anomalies are appended only when they happened.
  s.seed_conflicts = 2;
  s.sched_switches = 1000;
  s.sched_chain_breaks = 3;
  s.sched_running_inferred = 4;
  EXPECT_EQ(FormatSummary(s),
            "requests 500 (timed out 0), events joined 18000 (in requests 17500, discarded 500), late records 3, "
            "unattributed cpu 1.2% (3.400 ms of 280.000 ms), 2 events reached two requests (kept apart), "
            "7 of 1000 switch-ins missing from the trace");
}

}  // namespace
}  // namespace jackdaw::join
