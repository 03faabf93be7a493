// One ClickHouse sink's sustained insert rate into a private
// clickhouse-server on this machine, and the bytes a stored request takes
// (docs/clickhouse.md, "Cost"):
//   bench_clickhouse_sink [REQUESTS]   (default 1,000,000)
// Requests are synthetic but shaped as a two-tier request is (a front and
// a back process, one call with its TCP sequence range, one connection),
// with varying ids, times and demands so the columns compress as real ones
// would. The sender waits for room (as analyze does), so nothing is
// dropped and the rate is the store's and the sink's. Prints one JSON line.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/clickhouse/clickhouse_sink.h"
#include "private_clickhouse.h"

namespace {

using namespace jackdaw;

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream f(s.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && f >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::vector<model::Request> Templates(size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(std::log(400e3), 0.6);  // ~0.4 ms
  std::uniform_int_distribution<uint64_t> cpu(20'000, 400'000), bytes(200, 20'000), port(32768, 60999);
  std::vector<model::Request> out;
  for (size_t i = 0; i < n; ++i) {
    model::Request r;
    r.tgid = 1200;
    r.threads = {1201, static_cast<uint32_t>(1300 + i % 8)};
    const uint64_t lat = static_cast<uint64_t>(latency(rng));
    r.end_ns = lat;  // start 0: shifted per use
    r.totals.cpu_ns = cpu(rng);
    r.totals.net_bytes_in = bytes(rng) / 10;
    r.totals.net_bytes_out = bytes(rng);
    r.totals.blocked_ns = lat / 2;
    r.totals.blocked_net_ns = lat / 2;
    r.connections.push_back({"10.0.0.1:80", "10.0.1." + std::to_string(i % 200) + ":" + std::to_string(port(rng))});
    model::ProcessSegment front, back;
    front.tgid = 1200, front.comm = "nginx", front.cpu_ns = r.totals.cpu_ns / 3, front.events = 14;
    back.tgid = 2400, back.comm = "php-fpm", back.tier = 1, back.cpu_ns = r.totals.cpu_ns - front.cpu_ns;
    back.events = 30;
    r.processes = {front, back};
    model::Call c;
    c.start_ns = lat / 10, c.end_ns = lat - lat / 10;
    c.caller_tgid = 1200, c.peer_tgid = 2400;
    c.endpoint = {"127.0.0.1:" + std::to_string(port(rng)), "127.0.0.1:9000"};
    c.bytes_out = bytes(rng) / 4, c.bytes_in = bytes(rng);
    c.seq_out_start = static_cast<uint32_t>(rng());
    c.seq_out_end = c.seq_out_start + static_cast<uint32_t>(c.bytes_out);
    c.answered = true;
    r.calls = {c};
    r.events.resize(44);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  jackdaw::testing::PrivateClickHouse ch;
  if (Status st = ch.Start(); !st.ok()) return fprintf(stderr, "%s\n", st.message().c_str()), 1;
  clickhouse::SinkOptions o;
  o.url = ch.url();
  o.context = {"bench-host", "tcp-threadpool"};
  o.sender.wait_when_full = true;
  auto sink = clickhouse::ClickHouseSink::Create(o);
  if (!sink.ok()) return fprintf(stderr, "%s\n", sink.status().message().c_str()), 1;
  if (Status st = (*sink)->CreateTables(); !st.ok()) return fprintf(stderr, "%s\n", st.message().c_str()), 1;
  std::vector<model::Request> templates = Templates(4096);
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.0 / 100e3);  // 10k requests/s of trace time
  const double server_cpu0 = CpuSeconds(ch.pid()), self_cpu0 = SelfCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t mono = 1'000'000'000'000;
  const uint64_t wall0 = 1'764'000'000'000'000'000;
  for (uint64_t id = 1; id <= n; ++id) {
    model::Request& r = templates[id % templates.size()];
    const uint64_t lat = r.end_ns - r.start_ns;
    mono += static_cast<uint64_t>(gap(rng));
    const uint64_t call_off = r.calls[0].start_ns - r.start_ns, call_end = r.calls[0].end_ns - r.start_ns;
    r.id = id;
    r.start_ns = mono, r.end_ns = mono + lat;
    r.start_wall_ns = wall0 + mono;
    r.calls[0].start_ns = mono + call_off, r.calls[0].end_ns = mono + call_end;
    (*sink)->AddRequest(r);
    (*sink)->AssignCluster(id, static_cast<int64_t>(id % 7 == 0 ? id % 5 : 0));
  }
  const http::SenderStats s = (*sink)->Finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double server_cpu = CpuSeconds(ch.pid()) - server_cpu0, self_cpu = SelfCpuSeconds() - self_cpu0;
  // Merged parts: what the table settles to.
  (void)ch.Query("OPTIMIZE TABLE jackdaw.requests FINAL");
  const uint64_t on_disk = ch.Number(
      "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'jackdaw' AND table = 'requests' AND active");
  const uint64_t compressed = ch.Number(
      "SELECT sum(data_compressed_bytes) FROM system.columns WHERE database = 'jackdaw' AND table = 'requests'");
  const uint64_t uncompressed = ch.Number(
      "SELECT sum(data_uncompressed_bytes) FROM system.columns WHERE database = 'jackdaw' AND table = 'requests'");
  const uint64_t stored = ch.Number("SELECT count() FROM jackdaw.requests");
  auto widest = ch.Query(
      "SELECT name, data_compressed_bytes FROM system.columns WHERE database = 'jackdaw' AND table = 'requests' "
      "ORDER BY data_compressed_bytes DESC LIMIT 5");
  nlohmann::json j = {{"requests", n},
                      {"stored", stored},
                      {"dropped", s.requests_dropped},
                      {"failed", s.requests_failed},
                      {"batches", s.batches_sent},
                      {"seconds", secs},
                      {"requests_per_s", double(s.requests_sent) / secs},
                      {"sink_cpu_us_per_request", self_cpu * 1e6 / double(n)},
                      {"clickhouse_cpu_us_per_request", server_cpu * 1e6 / double(n)},
                      {"bytes_on_disk_per_request", double(on_disk) / double(std::max<uint64_t>(stored, 1))},
                      {"compressed_bytes_per_request", double(compressed) / double(std::max<uint64_t>(stored, 1))},
                      {"uncompressed_bytes_per_request", double(uncompressed) / double(std::max<uint64_t>(stored, 1))},
                      {"widest_columns", widest.ok() ? *widest : widest.status().message()}};
  printf("%s\n", j.dump().c_str());
  return stored == n ? 0 : 1;
}
