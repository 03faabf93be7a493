#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/likelihood/model_io.h"
#include "model/likelihood/online_likelihood.h"
#include "model/likelihood/request_likelihood.h"
#include "request/synthetic.h"
#include "report/progress_bar.h"

namespace jackdaw::report {
namespace {

namespace fs = std::filesystem;
using model::Request;
using nlohmann::json;

// A Magpie Table 1 mix (20 of each type, 5 concurrent clients' worth of
// preemption) plus one request with a 100 ms chunk of CPU.
struct Fixture {
  std::vector<Request> requests;
  TruthLabels truth;
  model::WorkloadModel model;
  uint64_t outlier_id = 0;
};

const Fixture& Get() {
  static Fixture* f = [] {
    auto* f = new Fixture;
    model::synthetic::RequestFactory factory(77);
    factory.jitter().preempt = true;
    factory.jitter().max_runq_ns = 1'000'000;
    std::string letters;
    f->requests = factory.MakeMix("ABCDEF", 20, &letters);
    for (size_t i = 0; i < f->requests.size(); ++i)
      f->truth[f->requests[i].id] = std::string(1, letters[i]);
    // The outlier: an A whose sendto carries 100 ms more CPU (a busy-waiting
    // driver, Magpie §6.3).
    Request odd = factory.Make('A', 999, 2'000'000'000ull, 1003, 2001);
    for (model::RequestEvent& e : odd.events)
      if (e.symbol == "sys_enter:sendto") e.cpu_ns += 100'000'000;
    odd.end_ns += 100'000'000;
    f->requests.push_back(odd);
    f->truth[999] = "A";  // an A request; the driver bug makes it an anomaly, not a kind
    f->outlier_id = 999;
    model::ModelOptions o;
    o.accounted_cpu_fraction = 0.95;
    auto m = model::BuildModel(f->requests, o);
    if (!m.ok()) abort();
    f->model = std::move(m).value();
    return f;
  }();
  return *f;
}

fs::path TempDir() {
  char tmpl[] = "/tmp/jdw_report_test.XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? fs::path(d) : fs::temp_directory_path();
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(ReportTest, TextTableHasTable2ColumnsAndAnomalies) {
  const Fixture& f = Get();
  std::ostringstream out;
  TextReportOptions o;
  o.truth = &f.truth;
  WriteTextReport(f.model, out, o);
  const std::string t = out.str();
  for (const char* s :
       {"Cluster", "Size", "Contents", "Dia.", "Min.Sep.", "accounted CPU: 95.0%",
        "model error:", "purity 1.000", "adjusted Rand index 1.000", "Anomalies (1)", "request 999",
        "in total CPU +", "sys_enter:sendto' CPU 1", "Latency breakdown"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  for (const char* letter : {"20B", "20C", "20D", "20E", "20F"})
    EXPECT_NE(t.find(letter), std::string::npos) << letter;
  // Six types; the outlier (1 of 121, under 2%) is attached to its type's
  // cluster and reported as an anomaly.
  EXPECT_EQ(f.model.clusters.size(), 6u) << t;
  EXPECT_NE(t.find("outliers: 1 requests"), std::string::npos) << t;
}

TEST(ReportTest, JsonHoldsTheWholeModelWithMemberIds) {
  const Fixture& f = Get();
  fs::path dir = TempDir();
  ASSERT_TRUE(WriteJsonReport(f.model, dir / "model.json", &f.truth).ok());
  json j = json::parse(ReadFile(dir / "model.json"));
  EXPECT_EQ(j["format"], "jackdaw.model");
  EXPECT_EQ(j["summary"]["requests"], f.requests.size());
  EXPECT_DOUBLE_EQ(j["summary"]["accounted_cpu_fraction"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(j["summary"]["ground_truth"]["adjusted_rand_index"].get<double>(), 1.0);
  std::set<uint64_t> ids;
  for (const json& c : j["clusters"]) {
    for (const json& id : c["members"]) EXPECT_TRUE(ids.insert(id.get<uint64_t>()).second);
    EXPECT_EQ(c["members"].size(), c["size"].get<size_t>());
  }
  EXPECT_EQ(ids.size(), f.requests.size());
  for (const json& r : j["requests"]) {
    const json& c = j["clusters"][r["cluster"].get<size_t>()];
    bool found = false;
    for (const json& id : c["members"]) found |= id == r["id"];
    EXPECT_TRUE(found);
  }
  ASSERT_EQ(j["anomalies"].size(), 1u);
  EXPECT_EQ(j["anomalies"][0]["request"], f.outlier_id);
  EXPECT_FALSE(j["anomalies"][0]["events"].empty());
  fs::remove_all(dir);
}

// The likelihood model (model/likelihood/) in both reports: present only
// when analyze learned one; the ranked list and the per-request scores.
TEST(ReportTest, LeastLikelyRequestsBesideTheAnomalies) {
  model::WorkloadModel m = Get().model;
  {
    std::ostringstream text;
    WriteTextReport(m, text);
    EXPECT_EQ(text.str().find("Least likely requests"), std::string::npos);
    const json j = json::parse(ModelToJson(m).dump());
    EXPECT_FALSE(j.contains("unlikely"));
    EXPECT_FALSE(j.contains("likelihood"));
    EXPECT_FALSE(j["requests"][0].contains("log_likelihood"));
  }
  model::likelihood::LikelihoodOptions lo;
  lo.unlikely = 3;
  model::likelihood::RequestLikelihood rl({}, lo);
  for (const Request& r : Get().requests) rl.Add(r);
  rl.Learn();
  m.likelihood = rl.Summary();
  for (size_t i = 0; i < m.requests.size(); ++i) m.requests[i].log_likelihood = rl.Score(Get().requests[i]);
  ASSERT_EQ(m.likelihood.unlikely.size(), 3u);

  std::ostringstream text;
  WriteTextReport(m, text);
  const std::string t = text.str();
  const size_t section = t.find("Least likely requests (3 of 121");
  ASSERT_NE(section, std::string::npos) << t;
  EXPECT_GT(section, t.find("Anomalies ("));
  EXPECT_NE(t.find("request " + std::to_string(m.likelihood.unlikely[0].request_id) + ": log-likelihood", section),
            std::string::npos);

  const json j = json::parse(ModelToJson(m).dump());
  EXPECT_EQ(j["likelihood"]["method"], "alergia");
  EXPECT_EQ(j["likelihood"]["requests_learned"], 121);
  EXPECT_EQ(j["likelihood"]["states"], m.likelihood.states);
  ASSERT_EQ(j["unlikely"].size(), 3u);
  double previous = -1e300;
  for (const json& u : j["unlikely"]) {
    EXPECT_GE(u["log_likelihood"].get<double>(), previous);  // least likely first
    previous = u["log_likelihood"];
    for (const json& s : u["steps"]) {
      EXPECT_LT(s["probability"].get<double>(), s["expected_probability"].get<double>());
      EXPECT_NE(s["symbol"], s["expected"]);
    }
  }
  // Each listed request carries its score, no lower than the least likely.
  for (const json& r : j["requests"]) {
    ASSERT_TRUE(r.contains("log_likelihood"));
    EXPECT_LE(r["log_likelihood"].get<double>(), 0);
    EXPECT_GE(r["log_likelihood"].get<double>(), j["unlikely"][0]["log_likelihood"].get<double>());
  }
  // The model it carries, read back (as live --baseline reads it), gives
  // every request the score the --json lists for it, to the bit.
  m.likelihood.model.schema = "testserver";
  const json saved = json::parse(ModelToJson(m).dump(1));
  auto loaded = model::likelihood::ModelFromJson(saved, "model.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->schema, "testserver");
  EXPECT_EQ(saved["likelihood"]["model"]["states"].size(), m.likelihood.states);
  model::likelihood::OnlineLikelihood scorer(std::move(*loaded), {});
  const canonical::Canonicalizer canonicalize({});
  for (size_t i = 0; i < m.requests.size(); ++i) {
    const auto r = scorer.Observe(Get().requests[i], canonicalize(Get().requests[i]));
    ASSERT_TRUE(r.scored);
    EXPECT_EQ(r.log_likelihood, saved["requests"][i]["log_likelihood"].get<double>()) << i;
  }
}

TEST(ReportTest, CsvOneFilePerTable) {
  const Fixture& f = Get();
  fs::path dir = TempDir() / "csv";
  ASSERT_TRUE(WriteCsvReports(f.model, dir).ok());
  auto lines = [&](const char* name) {
    std::string s = ReadFile(dir / name);
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  };
  EXPECT_EQ(lines("requests.csv"), f.requests.size() + 1);
  EXPECT_EQ(lines("clusters.csv"), f.model.clusters.size() + 1);
  EXPECT_EQ(lines("anomalies.csv"), 2u);
  EXPECT_EQ(lines("model_error.csv"), 5u);
  EXPECT_EQ(lines("latency_breakdown.csv"), f.model.breakdowns.size() + 1);
  EXPECT_GT(lines("summary.csv"), 5u);
  // Fields with commas are quoted: the anomaly's event list has some.
  std::string anomalies = ReadFile(dir / "anomalies.csv");
  EXPECT_NE(anomalies.find(",\""), std::string::npos);
  fs::remove_all(dir.parent_path());
}

// Complete events on one track must nest: no partial overlaps.
void ExpectProperNesting(const json& events) {
  std::map<std::pair<int, uint64_t>, std::vector<std::pair<double, double>>> tracks;
  for (const json& e : events)
    if (e["ph"] == "X")
      tracks[{e["pid"].get<int>(), e["tid"].get<uint64_t>()}].emplace_back(
          e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;
    for (auto [start, end] : slices) {
      while (!open.empty() && open.back() <= start + 1e-6) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(end, open.back() + 1e-6) << "pid " << track.first << " tid " << track.second;
      }
      open.push_back(end);
    }
  }
}

TEST(ReportTest, PerfettoTraceParsesWithOneSlicePerRequest) {
  const Fixture& f = Get();
  fs::path dir = TempDir();
  ASSERT_TRUE(WritePerfettoTrace(f.model, f.requests, dir / "trace.json").ok());
  json j = json::parse(ReadFile(dir / "trace.json"));
  ASSERT_TRUE(j.contains("traceEvents"));
  const json& ev = j["traceEvents"];
  std::map<std::string, size_t> by_cat;
  std::set<uint64_t> request_ids;
  std::set<std::string> process_names;
  size_t canonical_threads = 0;
  for (const canonical::CanonicalRequest& c : f.model.canonical) canonical_threads += c.num_threads;
  for (const json& e : ev) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      process_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] != "X" && e["ph"] != "i") continue;
    by_cat[e["cat"].get<std::string>()]++;
    if (e["cat"] == "request") {
      EXPECT_TRUE(request_ids.insert(e["args"]["request"].get<uint64_t>()).second);
      std::string name = e["name"];
      if (e["args"]["request"] == f.outlier_id) {
        EXPECT_EQ(name, "anomaly");
      } else {
        EXPECT_EQ(name.rfind("cluster ", 0), 0u) << name;
      }
      // Perfetto colours by name without digits: names must not carry any.
      EXPECT_EQ(name.find_first_of("0123456789"), std::string::npos);
    }
  }
  EXPECT_EQ(by_cat["request"], f.requests.size());
  EXPECT_EQ(request_ids.size(), f.requests.size());
  EXPECT_EQ(by_cat["canonical"], canonical_threads);
  EXPECT_GT(by_cat["canonical_work"], 0u);
  EXPECT_GE(by_cat["thread"], f.requests.size());
  EXPECT_GT(by_cat["event"], 0u);
  EXPECT_EQ(process_names.size(), 3u);
  ExpectProperNesting(ev);
  // Every cross-thread causal edge is one flow arrow: a start on the
  // signalling thread, an end on the resumed one, no earlier than the start.
  size_t cross_thread_edges = 0;
  for (const Request& r : f.requests)
    for (const model::CausalEdge& e : r.edges)
      if (r.events[e.from].tid != r.events[e.to].tid) cross_thread_edges++;
  EXPECT_GT(cross_thread_edges, 0u) << "the fixture's E and F requests hand over between threads";
  std::map<uint64_t, json> flow_start, flow_end;
  for (const json& e : ev) {
    if (e["ph"] == "s") {
      EXPECT_TRUE(flow_start.emplace(e["id"].get<uint64_t>(), e).second);
    } else if (e["ph"] == "f") {
      EXPECT_TRUE(flow_end.emplace(e["id"].get<uint64_t>(), e).second);
    }
  }
  EXPECT_EQ(flow_start.size(), cross_thread_edges);
  EXPECT_EQ(flow_end.size(), cross_thread_edges);
  for (const auto& [id, s] : flow_start) {
    ASSERT_TRUE(flow_end.count(id)) << id;
    const json& e = flow_end.at(id);
    EXPECT_NE(s["tid"], e["tid"]);
    EXPECT_LE(s["ts"].get<double>(), e["ts"].get<double>());
    EXPECT_EQ(e["bp"], "e");
  }
  // Wrong request span: an error, not a crash.
  EXPECT_FALSE(BuildPerfettoTrace(f.model, std::span(f.requests).first(3)).ok());
  fs::remove_all(dir);
}

TEST(ReportTest, HtmlReportRendersHeadlessInChromium) {
  const Fixture& f = Get();
  fs::path dir = TempDir();
  HtmlReportOptions o;
  o.truth = &f.truth;
  ASSERT_TRUE(WriteHtmlReport(f.model, f.requests, dir / "report.html", o).ok());
  std::string html = ReadFile(dir / "report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("request 999"), std::string::npos);

  const char* chromium = "/usr/bin/chromium";
  if (access(chromium, X_OK) != 0) {
    if (getenv("CI")) FAIL() << chromium << " is missing (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << chromium << " is not installed yet; run scripts/install-deps.sh";
  }
  fs::path png = dir / "report.png", profile = dir / "profile", log = dir / "chromium.log";
  std::string cmd = std::string("timeout 180 ") + chromium +
                    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                    " --disable-background-networking --disable-component-update --disable-sync"
                    " --user-data-dir=" +
                    profile.string() + " --screenshot=" + png.string() +
                    " --window-size=1200,1600 file://" + (dir / "report.html").string() + " >" +
                    log.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << cmd << "\n" << ReadFile(log);
  ASSERT_TRUE(fs::exists(png)) << ReadFile(log);
  std::string bytes = ReadFile(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  fs::remove_all(dir);
}

TEST(ReportTest, WritersReportUnwritablePaths) {
  const Fixture& f = Get();
  EXPECT_FALSE(WriteJsonReport(f.model, "/nonexistent-dir/x.json").ok());
  EXPECT_FALSE(WritePerfettoTrace(f.model, f.requests, "/nonexistent-dir/x.json").ok());
  EXPECT_FALSE(WriteHtmlReport(f.model, f.requests, "/nonexistent-dir/x.html").ok());
  EXPECT_FALSE(WriteCsvReports(f.model, "/proc/jdw-no-such-dir").ok());
}

// Reports go through the checked open: a link planted under the output's
// name (or as the CSV directory) is refused and what it points to is kept.
TEST(ReportTest, WritersRefuseALinkPlantedUnderTheOutputName) {
  const Fixture& f = Get();
  const fs::path dir = TempDir() / ("links-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path victim = dir / "victim";
  { std::ofstream(victim) << "secret\n"; }
  for (const char* name : {"model.json", "trace.json", "report.html"}) fs::create_symlink(victim, dir / name);
  fs::create_directory_symlink(dir, dir / "csv");
  const Status json = WriteJsonReport(f.model, dir / "model.json");
  const Status perfetto = WritePerfettoTrace(f.model, f.requests, dir / "trace.json");
  const Status html = WriteHtmlReport(f.model, f.requests, dir / "report.html");
  const Status csv = WriteCsvReports(f.model, dir / "csv");
  for (const Status* s : {&json, &perfetto, &html, &csv}) {
    EXPECT_FALSE(s->ok());
    EXPECT_NE(s->message().find("symbolic link"), std::string::npos) << s->message();
  }
  EXPECT_EQ(ReadFile(victim), "secret\n");
  EXPECT_FALSE(fs::exists(dir / "requests.csv"));
  fs::remove_all(dir);
}

TEST(ReportTest, ProgressBarOnTerminalAndInLogs) {
  for (int tty : {1, 0}) {
    FILE* out = tmpfile();
    ASSERT_NE(out, nullptr);
    {
      ProgressBar bar(out, tty);
      auto cb = bar.Callback();
      for (uint64_t i = 0; i <= 1000; i += 250) cb("cluster", i, 1000);
      cb("refine", 1000, 1000);
    }
    fflush(out);
    rewind(out);
    std::string s;
    char buf[512];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), out)) > 0) s.append(buf, got);
    fclose(out);
    if (tty) {
      EXPECT_NE(s.find('\r'), std::string::npos);
      EXPECT_NE(s.find("100%"), std::string::npos);
      EXPECT_NE(s.find("refine"), std::string::npos);
    } else {
      EXPECT_EQ(s, "jackdaw: cluster: 1000/1000 done\njackdaw: refine: 1000/1000 done\n");
    }
  }
}

TEST(ReportTest, ClusterLetters) {
  EXPECT_EQ(ClusterLetters(0), "a");
  EXPECT_EQ(ClusterLetters(25), "z");
  EXPECT_EQ(ClusterLetters(26), "ba");
  EXPECT_EQ(ClusterLetters(27), "bb");
}

}  // namespace
}  // namespace jackdaw::report
