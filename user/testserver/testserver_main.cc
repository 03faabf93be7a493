// jackdaw-testserver: the validation workload's HTTP server (Magpie §6,
// Table 1). See server.h for the threads and README-probes.md for the USDT
// probes.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "testserver/request_types.h"
#include "testserver/server.h"
#include "testserver/spin.h"

namespace {

constexpr char kProg[] = "jackdaw-testserver";

constexpr char kDescription[] = R"(jackdaw-testserver: a small HTTP/1.1 server whose URLs reproduce the request
types of Magpie (OSDI 2004) Table 1, so that jackdaw's request extraction and
clustering can be checked against a known workload.

URLs (type letter as used by jackdaw-load --mix):
  A /longspin   one thread spins the CPU 30 ms
  B /shortspin  one thread spins 15 ms
  C /small      12 KB (12288 B) static file read from the docroot
  D /tiny       5 KB (5120 B) static file read from the docroot
  E /parspin    the worker hands a 15 ms spin to a helper thread and spins
                15 ms itself concurrently, then waits for the helper
  F /rpcspin    the worker spins 7.5 ms, signals a helper and waits; the helper
                spins 15 ms and signals back; the worker spins 7.25 ms more
  anything else -> 404

Threads: one acceptor hands each connection through a queue to a fixed pool
of --workers; E and F use a fixed pool of --helpers. Spins are loops of a
fixed iteration count calibrated at start (printed on stderr as
"calibration: N iterations/ms"), not sleeps. Every response carries
X-Request-Id (the request id of the USDT probes); spin responses also carry
X-Spin-Cpu-Ns (thread CPU ns the spins took, all threads) and X-Spin-Trace
(label:tid:nominal_ns:cpu_ns:start_ns:end_ns per spin, CLOCK_MONOTONIC).
USDT probes: provider jackdaw_ts, see user/testserver/README-probes.md.

Once ready it prints "listening on ADDR:PORT" on stdout. SIGINT/SIGTERM stop it
cleanly (exit 0).
)";

constexpr char kFooter[] = R"(
Examples:
  jackdaw-testserver                       # 127.0.0.1:8080, 4 workers, 2 helpers
  curl -i http://127.0.0.1:8080/rpcspin    # see X-Spin-Trace: who spun, how long
  jackdaw-testserver --port 0 --direct-io  # any free port (printed);
                                           # C/D read the disk on every request
  jackdaw-testserver --iters-per-ms 700000 # skip calibration: the same work as the
                                           # run that printed "calibration: 700000 ..."
  jackdaw-testserver --port 8080 & sleep 1
  jackdaw-load --url http://127.0.0.1:8080 -n 500 -c 5 --mix A:0.5,B:0.5 \
      --ground-truth truth.jsonl           # Magpie Table 2, experiment 1.6
)";

}  // namespace

int main(int argc, char** argv) {
  using jackdaw::testserver::ReadMode;
  jackdaw::testserver::ServerOptions opts;
  int port = 8080;
  uint64_t iters_per_ms = 0;
  bool direct_io = false;
  bool drop_cache = false;

  CLI::App app(kDescription, kProg);
  app.footer(kFooter);
  app.add_option("--port", port, "TCP port to listen on; 0 picks a free one (printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--bind", opts.bind, "IPv4 address to listen on")->capture_default_str();
  app.add_option("--workers", opts.workers, "worker threads serving connections")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--helpers", opts.helpers, "helper threads for E (parspin) and F (rpcspin)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_flag("--keepalive", opts.keepalive,
               "serve several requests per connection (a worker holds the connection until "
               "the client closes it or it idles 5 s; use --workers >= clients)");
  app.add_option("--iters-per-ms", iters_per_ms,
                 "spin loop iterations per ms of CPU; skips calibration")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--docroot", opts.docroot,
                 "directory for the C/D files, created and filled at start "
                 "(default: a fresh /var/tmp/jackdaw-testserver.XXXXXX, removed at exit)");
  CLI::Option* dio = app.add_flag("--direct-io", direct_io,
                                  "read C/D with O_DIRECT: a disk read on every request "
                                  "(needs a disk-backed docroot, not tmpfs)");
  app.add_flag("--drop-cache", drop_cache,
               "posix_fadvise(DONTNEED) before each C/D read, so it goes to disk")
      ->excludes(dio);
  app.add_flag("-v,--verbose", opts.verbose, "one line per request on stderr");
  app.add_option("--backend", opts.backend,
                 "HOST:PORT (or unix:PATH) of a second jackdaw-testserver that G /book (1 call) and "
                 "H /categories (3 calls) call for GET /tiny: the two-tier site of Magpie's Table 6");
  CLI::Option* unix_opt = app.add_option("--unix", opts.unix_path,
                                         "listen on this unix-domain stream socket instead of TCP (the file "
                                         "is replaced at start and removed at stop)");
  unix_opt->excludes(app.get_option("--bind"));
  app.add_flag("--backend-pool", opts.backend_pool,
               "reuse one keep-alive connection to the backend per worker thread (a pooled upstream; "
               "start the backend with --keepalive)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fprintf(stderr, "%s: %s (see --help)\n", kProg, e.what());
    return 1;
  }
  opts.port = static_cast<uint16_t>(port);
  opts.read_mode = direct_io ? ReadMode::kDirect : drop_cache ? ReadMode::kDropCache : ReadMode::kCached;

  // Only the main thread takes SIGINT/SIGTERM (sigwait below); every thread
  // started later inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  jackdaw::testserver::TestServer server(opts);
  jackdaw::Status st = server.Listen();
  if (!st.ok()) {
    fprintf(stderr, "%s: %s\n", kProg, st.message().c_str());
    return st.exit_code();
  }
  if (iters_per_ms > 0) {
    server.set_iters_per_ms(iters_per_ms);
    fprintf(stderr, "calibration: %llu iterations/ms (fixed by --iters-per-ms)\n",
            static_cast<unsigned long long>(iters_per_ms));
  } else {
    jackdaw::testserver::Calibration c = jackdaw::testserver::Calibrate();
    server.set_iters_per_ms(c.iters_per_ms);
    fprintf(stderr, "calibration: %llu iterations/ms (median of %d runs, min %llu, max %llu)\n",
            static_cast<unsigned long long>(c.iters_per_ms), c.runs,
            static_cast<unsigned long long>(c.min_iters_per_ms),
            static_cast<unsigned long long>(c.max_iters_per_ms));
  }
  st = server.Start();
  if (!st.ok()) {
    fprintf(stderr, "%s: %s\n", kProg, st.message().c_str());
    return st.exit_code();
  }
  fprintf(stderr, "docroot: %s\n", server.docroot_dir().c_str());
  if (!opts.unix_path.empty()) printf("listening on unix:%s\n", opts.unix_path.c_str());
  else printf("listening on %s:%u\n", opts.bind.c_str(), server.port());
  fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.Stop();
  return 0;
}
