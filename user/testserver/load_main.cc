// jackdaw-load: the validation workload's load driver (Magpie §6 used
// Application Center Test). See load.h.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "testserver/load.h"

namespace {

constexpr char kProg[] = "jackdaw-load";

constexpr char kDescription[] = R"(jackdaw-load: sends a reproducible mix of Magpie Table 1 requests to
jackdaw-testserver and records the ground truth of every request, so that the
requests jackdaw extracts from a trace can be checked against what was sent.

Types (for --mix): A /longspin  B /shortspin  C /small  D /tiny
                   E /parspin   F /rpcspin
The type of request number 0..N-1 is drawn from --mix with --seed before
anything is sent: the same arguments give the same sequence, whatever -c.
Each of the -c clients sends its next request when its previous one has
completed; every request uses a new TCP connection unless --keepalive, so its
client port identifies it on the wire.

--ground-truth writes one record per request, in sequence order (JSON lines,
or CSV with a header): seq, type, url, client, local_port, sched_mono_ns
(--rate only), send_mono_ns / send_wall_ns (request begun: before connect),
recv_mono_ns / recv_wall_ns (response fully read), latency_ns, status, bytes
(body), wire_bytes, req_id (server X-Request-Id = USDT request id),
server_cpu_ns (X-Spin-Cpu-Ns), error. *_mono_ns are CLOCK_MONOTONIC,
*_wall_ns CLOCK_REALTIME.

Prints a summary at the end: requests, errors, mean/p50/p99 latency per type.
Exit status: 0 all requests returned 200; 1 otherwise, or on bad arguments or
if the server refuses connections.
)";

constexpr char kFooter[] = R"(
Examples:
  jackdaw-load --url http://127.0.0.1:8080 -n 500 --mix A            # Table 2 exp 1.1: 500A x1
  jackdaw-load --url http://127.0.0.1:8080 -n 500 -c 5 --mix A:0.5,B:0.5 \
      --ground-truth truth.jsonl                                      # exp 1.6: 500(A/B) x5
  jackdaw-load --url http://127.0.0.1:8080 -n 500 --mix C:1,D:1 --format csv \
      --ground-truth truth.csv                                        # exp 2.5
  jackdaw-load --url http://127.0.0.1:8080 -n 200 -c 4 --rate 50 --mix A:1,B:1,E:1,F:1
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace jackdaw::testserver;
  std::string url = "http://127.0.0.1:8080";
  std::string mix_spec = "A:0.5,B:0.5";
  std::string truth_path;
  std::string format = "jsonl";
  size_t requests = 500;
  int clients = 1;
  double rate = 0;
  uint64_t seed = 1;
  bool keepalive = false;
  double timeout_s = 10;

  CLI::App app(kDescription, kProg);
  app.footer(kFooter);
  app.add_option("--url", url, "server to load, http://HOST:PORT")->capture_default_str();
  app.add_option("-n,--requests", requests, "number of requests")
      ->check(CLI::Range(size_t{1}, size_t{100000000}))
      ->capture_default_str();
  app.add_option("--mix", mix_spec,
                 "request mix TYPE:WEIGHT[,TYPE:WEIGHT...], TYPE in A-H (G, H: a server with --backend), WEIGHT > 0 "
                 "(normalised; a bare TYPE weighs 1)")
      ->capture_default_str();
  app.add_option("-c,--clients", clients, "concurrent clients")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--rate", rate,
                 "fixed arrival rate in requests/s: request i is not sent before start + i/R "
                 "(late if all clients are busy); default: as fast as the clients go")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "seed of the request sequence")->capture_default_str();
  app.add_flag("--keepalive", keepalive,
               "one connection per client (start the server with --keepalive and "
               "--workers >= clients)");
  app.add_option("--ground-truth", truth_path, "write one record per request to FILE");
  app.add_option("--format", format, "ground-truth format")
      ->check(CLI::IsMember({"jsonl", "csv"}))
      ->capture_default_str();
  app.add_option("--timeout", timeout_s, "per-request socket timeout in seconds")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fprintf(stderr, "%s: %s (see --help)\n", kProg, e.what());
    return 1;
  }

  LoadOptions opts;
  jackdaw::StatusOr<std::vector<MixEntry>> mix = ParseMix(mix_spec);
  if (!mix.ok()) {
    fprintf(stderr, "%s: %s\n", kProg, mix.status().message().c_str());
    return 1;
  }
  jackdaw::StatusOr<Target> target = ParseUrl(url);
  if (!target.ok()) {
    fprintf(stderr, "%s: %s\n", kProg, target.status().message().c_str());
    return 1;
  }
  opts.target = *target;
  opts.mix = *mix;
  opts.requests = requests;
  opts.clients = clients;
  opts.rate = rate;
  opts.seed = seed;
  opts.keepalive = keepalive;
  opts.timeout_ms = static_cast<int>(timeout_s * 1000);
  signal(SIGPIPE, SIG_IGN);

  jackdaw::StatusOr<LoadResult> result = RunLoad(opts);
  if (!result.ok()) {
    fprintf(stderr, "%s: %s\n", kProg, result.status().message().c_str());
    return 1;
  }
  if (!truth_path.empty()) {
    jackdaw::Status st = WriteGroundTruth(
        truth_path, format == "csv" ? TruthFormat::kCsv : TruthFormat::kJsonLines, result->records);
    if (!st.ok()) {
      fprintf(stderr, "%s: %s\n", kProg, st.message().c_str());
      return 1;
    }
  }
  if (!result->fatal.empty()) {
    fprintf(stderr, "%s: %s (server went away after %zu requests; ground truth written for them)\n", kProg,
            result->fatal.c_str(), result->records.size());
    return 1;
  }
  char rate_buf[32] = "max";
  if (rate > 0) snprintf(rate_buf, sizeof(rate_buf), "%g/s", rate);
  printf("target: %s  mix: %s  clients: %d  seed: %llu  keepalive: %s  rate: %s\n",
         opts.target.base.c_str(), FormatMix(opts.mix).c_str(), clients,
         static_cast<unsigned long long>(seed), keepalive ? "yes" : "no", rate_buf);
  std::string summary = FormatSummary(*result);
  fputs(summary.c_str(), stdout);
  fflush(stdout);
  size_t errors = 0;
  for (const RequestRecord& r : result->records) errors += r.ok() ? 0 : 1;
  if (errors > 0) {
    fprintf(stderr, "%s: %zu of %zu requests failed\n", kProg, errors, result->records.size());
    return 1;
  }
  return 0;
}
