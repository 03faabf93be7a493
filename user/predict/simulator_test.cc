#include "predict/simulator.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

RequestScript CpuOnly(uint64_t ns) {
  RequestScript s;
  s.threads.resize(1);
  s.threads[0].steps.push_back({StepKind::kCpu, 0, ns});
  s.cpu_ns = ns;
  return s;
}

RequestScript DiskOnly(uint64_t ns) {
  RequestScript s;
  s.threads.resize(1);
  s.threads[0].steps = {{StepKind::kDiskSubmit, 0, ns}, {StepKind::kDiskWait, 0, 0}};
  s.ios = 1;
  s.disk_ns = ns;
  return s;
}

// Many recorded requests whose CPU demands are exponential with this mean:
// replayed uniformly, they are an exponential service time.
std::vector<RequestScript> ExponentialCpu(double mean_ns, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> d(1.0 / mean_ns);
  std::vector<RequestScript> v;
  for (size_t i = 0; i < n; ++i) v.push_back(CpuOnly(static_cast<uint64_t>(d(rng)) + 1));
  return v;
}

SimKind KindOf(const std::vector<RequestScript>& scripts, const std::string& label = "c0") {
  SimKind k;
  k.label = label;
  k.share = 1;
  for (const RequestScript& s : scripts) k.scripts.push_back(&s);
  return k;
}

TEST(Simulator, MM1MatchesTheAnalyticResponseTimeAndUtilisation) {
  const double service_ns = 1e6, rate = 600;  // rho = 0.6
  auto scripts = ExponentialCpu(service_ns, 20000, 7);
  double mean_service = 0;
  for (const auto& s : scripts) mean_service += static_cast<double>(s.cpu_ns) / scripts.size();
  SimConfig c;
  c.cpus = 1;
  c.rate_per_s = rate;
  c.requests = 300000;
  SimResult r = Simulate({KindOf(scripts)}, c);
  const double rho = rate * mean_service / 1e9;
  const double analytic_ms = mean_service / (1 - rho) / 1e6;  // M/M/1 (and M/G/1-PS)
  EXPECT_NEAR(r.cpu_utilisation, rho, 0.02 * rho);
  EXPECT_NEAR(r.kinds[0].mean_ms, analytic_ms, 0.04 * analytic_ms);
  EXPECT_NEAR(r.throughput_per_s, rate, 0.02 * rate);
  EXPECT_FALSE(r.saturated);
  EXPECT_EQ(r.bottleneck, "cpu");
}

TEST(Simulator, ClosedLoopSingleServerMatchesMeanValueAnalysis) {
  const double service_ns = 1e6, think_ns = 2e6;
  auto scripts = ExponentialCpu(service_ns, 20000, 11);
  double s = 0;
  for (const auto& x : scripts) s += static_cast<double>(x.cpu_ns) / scripts.size();
  for (uint32_t n : {1u, 3u, 8u}) {
    // Exact MVA for one processor-sharing queue and a delay (think) station.
    double q = 0, x = 0, resp = 0;
    for (uint32_t k = 1; k <= n; ++k) {
      resp = s * (1 + q);
      x = k / (resp + think_ns);
      q = x * resp;
    }
    SimConfig c;
    c.cpus = 1;
    c.clients = n;
    c.think_ns = think_ns;
    c.requests = 200000;
    SimResult r = Simulate({KindOf(scripts)}, c);
    EXPECT_NEAR(r.kinds[0].mean_ms, resp / 1e6, 0.04 * resp / 1e6) << n << " clients";
    EXPECT_NEAR(r.throughput_per_s, x * 1e9, 0.03 * x * 1e9) << n << " clients";
    EXPECT_NEAR(r.cpu_utilisation, x * s, 0.03) << n << " clients";
  }
}

TEST(Simulator, TwoCpusShareFourRequestsFairly) {
  std::vector<RequestScript> one{CpuOnly(1'000'000)};
  SimConfig c;
  c.cpus = 2;
  c.requests = 1000;
  c.clients = 2;  // one CPU each
  SimResult two = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(two.kinds[0].p50_ms, 1.0, 1e-6);
  EXPECT_NEAR(two.throughput_per_s, 2000, 1);
  EXPECT_NEAR(two.cpu_utilisation, 1.0, 1e-6);
  c.clients = 4;  // half a CPU each
  SimResult four = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(four.kinds[0].p99_ms, 2.0, 1e-6);
  EXPECT_NEAR(four.throughput_per_s, 2000, 1);
  EXPECT_NEAR(four.kinds[0].cpu_queue_ms, 1.0, 1e-6);
  c.cpu_speed = 2;  // twice as fast CPUs halve everything
  SimResult fast = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(fast.kinds[0].p50_ms, 1.0, 1e-6);
  EXPECT_NEAR(fast.throughput_per_s, 4000, 2);
}

TEST(Simulator, AWokenShortRequestIsNotSlowedByLongOnes) {
  // Three clients on one CPU; a tenth of the requests take 0.1 ms, the
  // rest 20 ms on average, so a short one nearly always arrives beside long
  // ones. (Long ones of one size would keep the clients in lockstep.)
  std::vector<RequestScript> long_one = ExponentialCpu(20e6, 500, 5), short_one{CpuOnly(100'000)};
  SimKind l = KindOf(long_one, "long"), sh = KindOf(short_one, "short");
  l.share = 0.9;
  sh.share = 0.1;
  SimConfig c;
  c.cpus = 1;
  c.clients = 3;
  c.requests = 4000;
  SimResult ps = Simulate({l, sh}, c);
  c.woken_slice_ns = 1'500'000;
  SimResult woken = Simulate({l, sh}, c);
  // Plain sharing gives a short request a third of the CPU; placed ahead
  // of the long ones, it runs at once.
  EXPECT_GT(ps.kinds[1].p50_ms, 0.25);
  EXPECT_NEAR(woken.kinds[1].p50_ms, 0.1, 1e-6);
  // The CPU does the same work either way.
  EXPECT_NEAR(woken.throughput_per_s, ps.throughput_per_s, 0.03 * ps.throughput_per_s);
}

TEST(Simulator, TheDiskIsAFifoQueueMD1) {
  std::vector<RequestScript> one{DiskOnly(1'000'000)};
  SimConfig c;
  c.cpus = 1;
  c.rate_per_s = 500;  // rho = 0.5
  c.requests = 200000;
  SimResult r = Simulate({KindOf(one)}, c);
  // Pollaczek-Khinchine, deterministic service: W = D + rho D / (2 (1 - rho)).
  EXPECT_NEAR(r.kinds[0].mean_ms, 1.5, 0.05);
  EXPECT_NEAR(r.disk_utilisation, 0.5, 0.01);
  EXPECT_EQ(r.bottleneck, "disk");
  EXPECT_EQ(r.kinds[0].bottleneck, "disk");
}

TEST(Simulator, ThreadsOfARequestWaitForEachOther) {
  // Worker: 1 ms, hands the helper 2 ms and waits, then 1 ms more. Even on
  // two CPUs the request takes 4 ms: the waits serialize it.
  RequestScript s;
  s.threads.resize(2);
  s.edges = 2;
  s.threads[0].steps = {{StepKind::kCpu, 0, 1'000'000},
                        {StepKind::kSignal, 0, 0},
                        {StepKind::kWait, 1, 0},
                        {StepKind::kCpu, 0, 1'000'000}};
  s.threads[1].steps = {{StepKind::kWait, 0, 0}, {StepKind::kCpu, 0, 2'000'000}, {StepKind::kSignal, 1, 0}};
  std::vector<RequestScript> one{s};
  SimConfig c;
  c.cpus = 2;
  c.clients = 1;
  c.requests = 100;
  SimResult r = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(r.kinds[0].p50_ms, 4.0, 1e-6);
  EXPECT_NEAR(r.cpu_utilisation, 0.5, 1e-6);
}

TEST(Simulator, EveryWakeUpCostsTheWakeUpLatency) {
  // Worker 1 ms, helper 2 ms, worker 1 ms: two wake-ups (the helper's, the
  // worker's), then a 3 ms external wait and its wake-up.
  RequestScript s;
  s.threads.resize(2);
  s.edges = 2;
  s.threads[0].steps = {{StepKind::kCpu, 0, 1'000'000}, {StepKind::kSignal, 0, 0}, {StepKind::kWait, 1, 0},
                        {StepKind::kCpu, 0, 1'000'000}, {StepKind::kDelay, 0, 3'000'000}};
  s.threads[1].steps = {{StepKind::kWait, 0, 0}, {StepKind::kCpu, 0, 2'000'000}, {StepKind::kSignal, 1, 0}};
  std::vector<RequestScript> one{s};
  SimConfig c;
  c.cpus = 2;
  c.clients = 1;
  c.requests = 100;
  c.wakeup_ns = 50'000;
  SimResult r = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(r.kinds[0].p50_ms, 7.15, 1e-6);
}

TEST(Simulator, ExternalWaitsAreDelaysThatLoadNothing) {
  RequestScript s;
  s.threads.resize(1);
  s.threads[0].steps = {{StepKind::kCpu, 0, 1'000'000}, {StepKind::kDelay, 0, 3'000'000}};
  std::vector<RequestScript> one{s};
  SimConfig c;
  c.cpus = 1;
  c.clients = 1;
  c.requests = 1000;
  SimResult r = Simulate({KindOf(one)}, c);
  // One client: 1 ms of CPU and 3 ms of waiting per request, the CPU idle
  // during the wait.
  EXPECT_NEAR(r.kinds[0].p50_ms, 4.0, 1e-6);
  EXPECT_NEAR(r.cpu_utilisation, 0.25, 1e-6);
  EXPECT_EQ(r.kinds[0].bottleneck, "wait");
  // Two clients arriving together share the CPU (2 ms each), then wait
  // side by side: one cycle of 5 ms serves both.
  c.clients = 2;
  SimResult two = Simulate({KindOf(one)}, c);
  EXPECT_NEAR(two.kinds[0].p50_ms, 5.0, 1e-6);
  EXPECT_NEAR(two.throughput_per_s, 400, 0.5);
  EXPECT_NEAR(two.cpu_utilisation, 0.4, 1e-6);
}

TEST(Simulator, TheSameSeedGivesTheSameResultAndTheMixIsHonoured) {
  auto a = ExponentialCpu(1e6, 500, 3);
  auto b = ExponentialCpu(3e6, 500, 4);
  SimKind ka = KindOf(a, "c0"), kb = KindOf(b, "c1");
  ka.share = 0.75;
  kb.share = 0.25;
  SimConfig c;
  c.cpus = 2;
  c.clients = 3;
  c.requests = 20000;
  c.seed = 42;
  SimResult x = Simulate({ka, kb}, c), y = Simulate({ka, kb}, c);
  EXPECT_EQ(x.kinds[0].p95_ms, y.kinds[0].p95_ms);
  EXPECT_EQ(x.throughput_per_s, y.throughput_per_s);
  EXPECT_NEAR(double(x.kinds[0].completed) / x.completed, 0.75, 0.02);
  c.seed = 43;
  SimResult z = Simulate({ka, kb}, c);
  EXPECT_NE(x.kinds[0].p95_ms, z.kinds[0].p95_ms);
}

TEST(Simulator, OpenLoopBeyondCapacityIsFlaggedSaturated) {
  std::vector<RequestScript> one{CpuOnly(1'000'000)};
  SimConfig c;
  c.cpus = 1;
  c.rate_per_s = 2000;
  c.requests = 100000;
  c.max_in_flight = 1000;
  SimResult r = Simulate({KindOf(one)}, c);
  EXPECT_TRUE(r.saturated);
}

}  // namespace
}  // namespace jackdaw::predict
