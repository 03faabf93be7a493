#include "predict/report.h"

#include <sstream>

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

PredictReport Example() {
  PredictReport r;
  r.scenario = "4 clients, 2 CPUs";
  r.recorded_conditions = "2 clients (estimated), 2 CPUs";
  r.prediction.throughput_per_s = 120;
  r.prediction.cpu_utilisation = 0.9;
  r.prediction.disk_utilisation = 0.1;
  r.prediction.bottleneck = "cpu";
  KindStats k;
  k.label = "c0";
  k.throughput_per_s = 120;
  k.p50_ms = 10;
  k.p95_ms = 20;
  k.p99_ms = 30;
  k.bottleneck = "cpu";
  r.prediction.kinds.push_back(k);
  r.recorded.throughput_per_s = 100;
  r.recorded.cpu_utilisation = 0.5;
  r.recorded.kinds.push_back({"c0", 100, 8, 16});
  r.self_check.throughput_per_s = 90;
  r.self_check.cpu_utilisation = 0.45;
  r.self_check.kinds.push_back({"c0", 90, 8.8, 16});
  return r;
}

TEST(Report, RelativeErrorIsSimulatedOverRecorded) {
  EXPECT_DOUBLE_EQ(RelativeError(110, 100), 0.1);
  EXPECT_DOUBLE_EQ(RelativeError(90, 100), -0.1);
  EXPECT_DOUBLE_EQ(RelativeError(0, 0), 0);
}

TEST(Report, JsonHasEveryKindAndTheSelfCheck) {
  nlohmann::ordered_json j = ToJson(Example());
  ASSERT_EQ(j["kinds"].size(), 1u);
  EXPECT_EQ(j["kinds"][0]["kind"], "c0");
  EXPECT_DOUBLE_EQ(j["kinds"][0]["p99_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(j["kinds"][0]["throughput"].get<double>(), 120);
  EXPECT_DOUBLE_EQ(j["utilisation"]["cpu"].get<double>(), 0.9);
  EXPECT_EQ(j["bottleneck"]["resource"], "cpu");
  EXPECT_NEAR(j["self_check"]["throughput"]["error"].get<double>(), -0.1, 1e-12);
  EXPECT_NEAR(j["self_check"]["kinds"][0]["p50_ms"]["error"].get<double>(), 0.1, 1e-12);
}

TEST(Report, TextPrintsThePredictionAndTheSelfCheckErrors) {
  std::ostringstream out;
  WriteText(Example(), out);
  const std::string t = out.str();
  EXPECT_NE(t.find("prediction: 4 clients, 2 CPUs"), std::string::npos) << t;
  EXPECT_NE(t.find("self-check"), std::string::npos) << t;
  EXPECT_NE(t.find("-10.0 %"), std::string::npos) << t;  // throughput
  EXPECT_NE(t.find("+10.0 %"), std::string::npos) << t;  // c0 p50
  EXPECT_EQ(t.find("disk utilisation %"), std::string::npos) << t;  // recorded none, simulated none
}

TEST(Report, TheOtherModelOfSharedCpusIsShownBesideThePrediction) {
  PredictReport r = Example();
  r.other_work.model = OtherWork::kShare;
  r.other_work.other_cpus = 0.5;
  r.alternative = r.prediction;
  r.alternative->throughput_per_s = 150;
  r.alternative_work.model = OtherWork::kThreads;
  r.alternative_work.background_threads = 1.5;
  nlohmann::ordered_json j = ToJson(r);
  EXPECT_EQ(j["other_work"]["model"], "share");
  EXPECT_DOUBLE_EQ(j["other_work"]["cpus"].get<double>(), 0.5);
  EXPECT_EQ(j["alternative"]["other_work"]["model"], "threads");
  EXPECT_DOUBLE_EQ(j["alternative"]["throughput"].get<double>(), 150);
  std::ostringstream out;
  WriteText(r, out);
  EXPECT_NE(out.str().find("0.50 CPUs taken by other work"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("1.50 always-runnable threads of other work (--other-work threads) instead: 150.0 req/s"),
            std::string::npos)
      << out.str();
  EXPECT_FALSE(ToJson(Example()).contains("alternative"));
}

TEST(Report, RecordedFiguresComeFromEveryRequest) {
  RecordedWorkload w;
  w.first_start_ns = 0;
  w.last_end_ns = 2'000'000'000;
  RecordedKind k;
  k.label = "c0";
  for (int i = 1; i <= 100; ++i) k.latencies_ns.push_back(i * 1e6);
  k.count = 100;
  w.kinds.push_back(k);
  w.requests = 100;
  Figures f = RecordedFigures(w);
  EXPECT_DOUBLE_EQ(f.throughput_per_s, 50);
  EXPECT_NEAR(f.kinds[0].p50_ms, 50.5, 1e-9);
  EXPECT_NEAR(f.kinds[0].p95_ms, 95.05, 1e-9);
}

}  // namespace
}  // namespace jackdaw::predict
