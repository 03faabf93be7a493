// jackdaw live: capture -> reorder -> join -> canonicalize -> cluster,
// continuously, with a top-like view (or JSON lines), a control socket and
// pinned maps, and a flight recorder.
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "capture/clock_sync.h"
#include "capture/recorder.h"
#include "capture/sweep_pacer.h"
#include "capture/sample_controller.h"
#include "cli/capture_args.h"
#include "cli/clickhouse_args.h"
#include "cli/otlp_args.h"
#include "export/otlp/span_ids.h"
#include "export/clickhouse/model_rows.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "common/loss_share.h"
#include "capture/loss_locator.h"
#include "cli/live_pipeline.h"
#include "common/clock.h"
#include "control/control_socket.h"
#include "control/controller.h"
#include "control/pins.h"
#include "metrics/http_endpoint.h"
#include "metrics/live_metrics.h"
#include "model/explain.h"
#include "model/likelihood/model_io.h"
#include "model/likelihood/online_likelihood.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"
#include "cli/self_path.h"

namespace jackdaw::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct LiveArgs {
  std::string schema;
  CaptureArgs cap;
  std::string backend = "bpf";
  double duration = 0;
  double refresh = 1;
  double window = 0.25;
  double drain = 0.5;
  double idle = double(LiveModelDefaults().idle_ns) / 1e9;
  double flight = 5;
  std::string flight_size = "48M";
  std::string flight_dir;
  bool flight_unlikely = false;  // an unlikely request writes it too
  std::string metrics;
  ClickHouseArgs clickhouse;
  OtlpArgs otlp;
  uint32_t warmup = LiveModelDefaults().warmup_requests;
  double warmup_s = double(LiveModelDefaults().warmup_ns) / 1e9;
  std::string json_out;  // "-": standard output, instead of the view
  bool quiet = false;
  // The likelihood watchdog (docs/likelihood.md, "Online in live").
  std::string baseline;
  uint32_t likelihood_warmup = model::likelihood::OnlineOptions{}.warmup;
  std::optional<double> likelihood_threshold;  // unset: calibrated on the requests learned
  std::string sample = "auto";  // --sample: every connection while the rings keep up
  std::string run_dir = control::kDefaultRunDir;
  std::string pin_root = control::kDefaultPinRoot;
};

std::string Ms(double ns) { return fmt::format("{:.3f}", ns / 1e6); }

// --flight-size: bytes, with K, M or G; one block (1M) at least.
StatusOr<size_t> ParseFlightSize(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  const auto bad = [&] {
    return ErrStatus("bad --flight-size '%s': expected a size from 1M to 1024G, e.g. 64M or 1G", s.c_str());
  };
  if (end == s.c_str() || errno || s[0] == '-') return bad();
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, ++end;
  else if (*end == 'M' || *end == 'm') shift = 20, ++end;
  else if (*end == 'G' || *end == 'g') shift = 30, ++end;
  if (*end != '\0' || v > (1ull << 40) >> shift) return bad();
  v <<= shift;
  if (v < RecordArena::kBlockBytes) return bad();
  return static_cast<size_t>(v);
}

// The flight recorder's window for `ctl status` and a snapshot's reply,
// with a note when the byte cap cut it short.
nlohmann::json FlightJson(const LivePipeline::FlightWindow& w) {
  nlohmann::json j = {{"asked_s", w.asked_s}, {"held_s", w.held_s}, {"bytes", w.bytes},
                      {"cap_bytes", w.cap_bytes}, {"capped", w.capped}};
  if (w.capped)
    j["note"] = fmt::format("the --flight-size cap ({} MB) holds {:.1f} s of the {:.1f} s asked: raise it for more",
                            w.cap_bytes >> 20, w.held_s, w.asked_s);
  return j;
}

struct NewAnomaly {
  uint64_t request_id, cluster_id;
  double distance;
};

struct NewUnlikely {
  uint64_t request_id;
  double log_likelihood;
  uint32_t events;
};

// The watchdog's model: --baseline's (checked against the session's schema,
// whose canonical strings it must have learned) or one learned from the
// stream.
StatusOr<std::unique_ptr<model::likelihood::OnlineLikelihood>> MakeWatchdog(const LiveArgs& a,
                                                                            const std::string& schema) {
  model::likelihood::OnlineOptions o;
  o.warmup = a.likelihood_warmup;
  o.threshold = a.likelihood_threshold;
  if (a.baseline.empty()) return std::make_unique<model::likelihood::OnlineLikelihood>(o);
  ASSIGN_OR_RETURN(model::likelihood::SavedModel m, model::likelihood::LoadModelFile(a.baseline));
  if (m.schema != schema)
    return ErrStatus("%s: its likelihood model was learned under schema '%s', this session runs '%s': use --schema "
                     "%s, or a baseline analyzed with --schema %s",
                     a.baseline.c_str(), m.schema.c_str(), schema.c_str(), m.schema.c_str(), schema.c_str());
  return std::make_unique<model::likelihood::OnlineLikelihood>(std::move(m), o);
}

nlohmann::json WatchdogJson(const model::likelihood::OnlineLikelihood& w) {
  const auto st = w.stats();
  return {{"source", st.baseline ? "baseline" : "stream"},
          {"warming_up", !st.has_model},
          {"model_states", st.model_states},
          {"prefix_tree_states", st.tree_states},
          {"learnings", st.learnings},
          {"threshold", w.threshold()},
          {"scored", st.scored},
          {"unlikely", st.unlikely}};
}

int Run(const LiveArgs& a, const std::string& argv0) {
  // The pipeline's vectors grow and shrink with every request (join sets,
  // canonical trees): with glibc's dynamic thresholds a large one is an
  // mmap/munmap each time and freed heap is trimmed and faulted back in,
  // page faults that were a few % of the session's CPU. Fixed thresholds
  // keep such memory in the heap; what it holds is bounded by the
  // pipeline's own peak.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  Status priv = a.backend == "bpf" ? capture::CheckPrivileges() : Status::Ok();  // the module checks its own
  if (!priv.ok()) return PrintError(priv.message()), 2;
  auto schema = schema::LoadSchema(a.schema, schema::DefaultSchemaDirs(argv0));
  if (!schema.ok()) return PrintError(schema.status().message()), 1;
  // Before anything is attached, as a bad schema is.
  if (!a.json_out.empty())
    if (Status out = CheckOutput(a.json_out); !out.ok()) return PrintError("--json: " + out.message()), 1;
  if (Status o = CheckOtlpArgs(a.otlp); !o.ok()) return PrintError(o.message()), kExitUsage;
  // Before anything is attached: a baseline that cannot be used ends the
  // session before it starts.
  auto watchdog = MakeWatchdog(a, schema->name);
  if (!watchdog.ok()) return PrintError(watchdog.status().message()), 1;
  // Requests into ClickHouse (docs/clickhouse.md): a store that is not
  // there at start is a warning, not the end of the session; its rows are
  // dropped and counted until it answers (the tables are made then).
  std::unique_ptr<clickhouse::ClickHouseSink> store;
  if (!a.clickhouse.url.empty()) {
    utsname u{};
    uname(&u);
    auto opened = OpenClickHouse(a.clickhouse, u.nodename, schema->name, /*offline=*/false);
    if (!opened.ok()) return PrintError(opened.status().message()), kExitUsage;
    store = std::move(*opened);
    if (Status made = store->CreateTables(); !made.ok())
      fprintf(stderr, "jackdaw: warning: %s; capturing on: rows are dropped and counted until it answers\n",
              made.message().c_str());
  }
  capture::CaptureOptions co;
  auto sel = Resolve(a.cap, &co);
  if (!sel.ok()) return PrintError(sel.status().message()), sel.status().exit_code();
  // A record the rings held back longer than the reorder window reaches
  // the join late and is dropped (a lost switch or syscall: merged requests,
  // impossible CPU); half the window leaves the other half for the drain.
  co.max_record_wait_ns = static_cast<uint64_t>(a.window * 1e9) / 2;
  bool sample_auto = false;
  if (Status sp = ParseSample(a.sample, &co.sample, &sample_auto, &co.sample_rate); !sp.ok())
    return PrintError(sp.message()), kExitUsage;
  // The module records every connection: auto (the default) quietly means
  // all there; a rate the user asked for is refused.
  if (co.sample && a.backend == "kmod") {
    if (!sample_auto)
      return PrintError("--sample needs the eBPF backend: the jackdaw.ko module records every connection "
                        "(drop --backend kmod, or --sample)"),
             kExitUsage;
    co.sample = sample_auto = false;
  }
  std::string choice;
  auto session = capture::OpenBackend(co, a.backend, capture::BackendClock::kMonoNs, &choice);
  if (!session.ok()) return PrintError(session.status().message()), 1;
  capture::CaptureBackend& cs = **session;
  if (std::string(cs.name()) != "bpf") sample_auto = false;  // --backend auto chose the module
  auto* bpf = dynamic_cast<capture::CaptureSession*>(&cs);  // pinned maps: eBPF only
  if (!a.quiet) fprintf(stderr, "jackdaw: backend: %s\n", choice.c_str());
  for (const auto& w : cs.warnings()) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());

  LivePipelineOptions po;
  po.reorder_window_ns = static_cast<uint64_t>(a.window * 1e9);
  po.flight_ns = static_cast<uint64_t>(a.flight * 1e9);
  auto flight_bytes = ParseFlightSize(a.flight_size);
  if (!flight_bytes.ok()) return PrintError(flight_bytes.status().message()), 1;
  po.flight_bytes = *flight_bytes;
  po.model.warmup_requests = a.warmup;
  po.model.warmup_ns = static_cast<uint64_t>(a.warmup_s * 1e9);
  po.model.idle_ns = static_cast<uint64_t>(a.idle * 1e9);
  std::vector<NewAnomaly> anomalies;
  std::vector<NewUnlikely> unlikely;  // since the last refresh (the canonical hook's)
  metrics::LiveMetrics live_metrics(schema->name);
  po.on_assign = [&](const model::StreamingModel::Assigned& as) {
    if (store) store->AssignCluster(as.request_id, static_cast<int64_t>(as.cluster_id));
    if (!as.founded) return;
    live_metrics.OnAnomaly();
    if (anomalies.size() < 64) anomalies.push_back({as.request_id, as.cluster_id, as.distance});
  };
  auto pipeline = LivePipeline::Create(*schema, LiveMeta(cs, co.usdt), po);
  if (!pipeline.ok()) return PrintError(pipeline.status().message()), 1;
  LivePipeline& pl = **pipeline;
  // Every complete request scored as it arrives (the canonical form is the
  // model's, made once for both).
  pl.set_canonical_hook([&](const model::Request& r, const canonical::CanonicalRequest& c) {
    const auto res = (*watchdog)->Observe(r, c);
    if (!res.scored) return;
    live_metrics.OnLikelihood(res.log_likelihood, res.unlikely);
    if (res.unlikely && unlikely.size() < 64) unlikely.push_back({r.id, res.log_likelihood, res.events});
  });

  const std::string session_id = std::to_string(getpid());
  // Requests as OpenTelemetry traces (docs/otlp.md), batched and sent from
  // a thread of their own; a receiver that is down costs dropped (and
  // counted) batches, never a stalled capture.
  std::unique_ptr<otlp::OtlpExporter> traces;
  if (a.otlp.any()) {
    utsname u{};
    uname(&u);
    auto opened = OpenOtlp(a.otlp, u.nodename, otlp::HashBytes(session_id + "@" + std::to_string(WallNowNs())),
                           /*offline=*/false);
    if (!opened.ok()) return PrintError(opened.status().message()), 1;
    traces = std::move(*opened);
  }
  // A snapshot is dated like a recording: a pair now and one per snapshot
  // fit the clocks, so export --pcap and analyze --pcap-input place its records
  // in wall-clock time.
  capture::ClockFit clock_fit;
  clock_fit.Add(capture::SampleClockPair());
  auto header = [&] {
    clock_fit.Add(capture::SampleClockPair());
    utsname u{};
    uname(&u);
    std::vector<std::string> names;
    for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
      if (cs.enabled_groups() & (1u << g)) names.push_back(trace::GroupName(g));
    return nlohmann::json{{"format", "jdw"},
                          {"abi_version", JDW_ABI_VERSION},
                          {"host", u.nodename},
                          {"kernel", std::string(u.release) + " " + u.version},
                          {"ncpus", cs.ncpus()},
                          {"backend", cs.name()},
                          {"timebase", "mono_ns"},
                          {"probe_groups", names},
                          {"filter_tgids", co.tgids},
                          {"command", {"jackdaw live (flight recorder)"}},
                          {"syscall_names", trace::SyscallNames()},
                          {"tasks", capture::ScanTasks(co.tgids)},
                          {"clock", capture::ClockJson(clock_fit.Mapping())}};
  };
  uint64_t last_delay_ns = 0, max_delay_ns = 0;
  // The naps between drains: --drain while the rings fill slowly, else as
  // long as the fullest takes to fill 1/16 of its size; at once from 1/8.
  capture::SweepPacer pacer(1.0 / 8, static_cast<int>(a.drain * 1000 + 0.5), 1.0 / 16);
  // Head sampling (--sample): the rate in force; auto lowers it while the
  // rings lose records or fill past half (capture/sample_controller.h).
  capture::SampleController sampler(co.sample ? co.sample_rate : 1.0);
  double sample_min = sampler.rate();
  control::Controller::Hooks hooks;
  hooks.snapshot = [&](const std::string& path) -> StatusOr<nlohmann::json> {
    ASSIGN_OR_RETURN(uint64_t n, pl.SaveSnapshot(path, header()));
    return nlohmann::json{{"snapshot", path}, {"records", n}, {"flight", FlightJson(pl.flight_window())}};
  };
  hooks.status = [&] {
    const auto& st = pl.model().stats();
    return nlohmann::json{{"session", session_id},
                          {"records", pl.records()},
                          {"requests", st.requests},
                          // Kept out of the model: without the count a loss
                          // would only show as fewer requests.
                          {"incomplete", st.incomplete},
                          // Records the reorder window refused: each one can
                          // merge or split requests, as a loss does.
                          {"late_records", pl.late_records()},
                          // The share of connections recorded (1 unless the
                          // rings could not keep up): counts are of those.
                          {"sample_rate", sampler.rate()},
                          // The lowest in force so far: below 1, the counts
                          // since then are of a sample.
                          {"sample_rate_min", sample_min},
                          {"clusters", pl.model().Running().size()},
                          {"retained_requests", st.retained},
                          {"arena_bytes", pl.arena_bytes()},
                          {"flight", FlightJson(pl.flight_window())},
                          {"pipeline_delay_ms", double(last_delay_ns) / 1e6},
                          {"pipeline_delay_max_ms", double(max_delay_ns) / 1e6},
                          {"drain_nap_ms", pacer.NapMs()},
                          {"likelihood", WatchdogJson(**watchdog)}};
  };
  control::Controller controller(&cs, hooks, co.filter_tgid);
  pl.set_record_counter(&controller);
  std::unique_ptr<metrics::HttpEndpoint> metrics_endpoint;
  if (!a.metrics.empty()) {
    auto ep = metrics::HttpEndpoint::Create(a.metrics, [&] {
      metrics::LiveState s;
      s.clusters = pl.model().Running();
      const auto lost = controller.Losses();
      for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
        if (cs.available_groups() & (1u << g))
          s.groups.push_back({trace::GroupName(g), (cs.enabled_groups() & (1u << g)) != 0, controller.events(g), lost[g]});
      s.records = pl.records();
      s.pipeline_delay_s = double(last_delay_ns) / 1e9;
      s.rss_bytes = control::ResidentBytes();
      s.warmed_up = pl.model().stats().warmed_up;
      s.likelihood_states = (*watchdog)->stats().has_model ? (*watchdog)->stats().model_states : 0;
      return live_metrics.Render(s);
    });
    if (!ep.ok()) return PrintError(ep.status().message()), 1;
    metrics_endpoint = std::move(*ep);
  }

  if (store || metrics_endpoint || traces)
    pl.set_request_hook([&](const model::Request& r) {
      if (metrics_endpoint) live_metrics.OnRequest(r);
      if (store) store->AddRequest(r);
      if (traces) traces->Add(r);
    });
  if (store) pl.set_connection_hook([&](model::Connection&& c) { store->AddConnection(c); });

  control::CleanStaleSessions(a.run_dir);
  auto server = control::ControlServer::Create(
      a.run_dir, session_id, [&](const std::vector<std::string>& w) { return controller.Handle(w); });
  if (!server.ok()) return PrintError(server.status().message()), 1;
  auto pins = control::PinnedMaps::Create(a.pin_root, session_id,
                                          bpf ? bpf->PinnableMaps() : std::vector<std::pair<std::string, int>>{});
  if (!pins.ok()) return PrintError(pins.status().message()), 1;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Losses located in time, as the recorder writes them into a trace: the
  // join marks the requests that ran through them incomplete, as analyze
  // does, instead of clustering what is left of them.
  capture::LossLocator losses;
  losses.Start(MonotonicNs(), cs.ReadLosses());
  Status st = cs.EnableAll();
  if (!st.ok()) return PrintError(st.message()), 1;
  // Processes that appeared while the probes were being attached.
  for (uint32_t p : sel->Scan()) {
    st = cs.AddTgid(p);
    if (!st.ok()) return PrintError(st.message()), 1;
  }
  if (!a.quiet)
    fprintf(stderr, "jackdaw: live session %s (%s): control socket %s, maps pinned in %s\n", session_id.c_str(),
            sel->Describe().c_str(), (*server)->path().c_str(), (*pins)->dir().c_str());
  if (metrics_endpoint) {
    if (!a.quiet)
      fprintf(stderr, "jackdaw: Prometheus metrics at http://%s/metrics\n", metrics_endpoint->bound().c_str());
    if (const std::string w = metrics_endpoint->ExposureWarning(); !w.empty())
      fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  }

  FILE* json = nullptr;
  if (!a.json_out.empty()) {
    auto opened = OpenOutput(a.json_out);
    if (!opened.ok()) return PrintError("--json: " + opened.status().message()), 1;
    json = *opened;
  }
  std::unique_ptr<FILE, void (*)(FILE*)> json_closer(json, CloseOutput);
  const bool tty = isatty(STDOUT_FILENO) && !IsStdout(a.json_out);
  const uint64_t start = MonotonicNs();
  uint64_t last_view = start, last_requests = 0, last_records = 0, last_flight = 0, last_store_model = start;
  std::map<uint64_t, uint64_t> last_count;
  uint64_t warned_not_followed = 0;
  std::vector<pollfd> fds;
  bool flight_capped_said = false;  // the cap's note goes to stderr once
  while (!g_stop) {
    // A nap of --drain (0.5 s) between drains while the rings fill slowly:
    // each drain costs a pass over join and model state gone cold during
    // the nap, so fewer, larger drains cost less per request (measured: 0.5 s
    // took 4-15 % less CPU than 0.25 s on the test server at 1,000 req/s)
    // and the pipeline delay stays under a second. The pacer shortens the
    // nap when a ring fills fast. The wait is on the control and metrics
    // sockets, so a `jackdaw ctl` request is taken at once (the rings
    // drained first, a group disabled within a millisecond or so of the
    // request, not at the end of the nap), and the endpoints are served only
    // when something is pending (no accept4 per turn).
    fds.clear();
    (*server)->AppendPollFds(&fds);
    const size_t control_fds = fds.size();
    if (metrics_endpoint) metrics_endpoint->AppendPollFds(&fds);
    const uint64_t wait_from = MonotonicNs();
    if (poll(fds.data(), fds.size(), pacer.NapMs()) < 0 && errno != EINTR) {
      st = ErrStatus("poll failed: %s", strerror(errno));
      break;
    }
    const auto ready = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i)
        if (fds[i].revents) return true;
      return false;
    };
    const bool control_due = (*server)->busy() || ready(0, control_fds);
    const bool metrics_due = metrics_endpoint && (metrics_endpoint->busy() || ready(control_fds, fds.size()));
    const uint64_t drain_from = MonotonicNs();
    // The rings are drained below without a wait: the nap is the poll's.
    const uint64_t waited_ns = drain_from - wait_from;
    auto polled = cs.Poll(pl, 0);
    if (!polled.ok()) {
      st = polled.status();
      break;
    }
    // Without the backend's figure (the module's rings): records of about
    // 48 bytes, all CPUs' counted against one ring, erring towards shorter naps.
    double fill = cs.last_fill();
    if (fill < 0) fill = double(std::max(*polled, 0)) * 48 / double(co.ring_bytes_per_cpu);
    pacer.OnSweep(MonotonicNs(), fill);
    // Before the drain's records reach the join: they are the first that
    // may have run through these losses.
    const auto loss_counts = cs.ReadLosses();
    losses.Observe(MonotonicNs(), loss_counts, drain_from);
    pl.AddLossIntervals(losses.TakeNew());
    if (sample_auto) {
      uint64_t lost_now = 0;
      for (const auto& cpu : loss_counts)
        for (uint64_t v : cpu) lost_now += v;
      if (sampler.Observe(MonotonicNs(), lost_now, fill, waited_ns)) {
        if (Status rs = cs.SetSampleRate(sampler.rate()); !rs.ok()) {
          st = rs;
          break;
        }
        sample_min = std::min(sample_min, sampler.rate());
      }
    }
    pl.EndDrain();
    // Records stay in the rings at most half a window (max_record_wait_ns):
    // everything produced a window before this drain began is here, so the
    // last requests before an idle spell need not wait for new traffic.
    pl.AdvanceTo(drain_from);
    pl.Trim();
    if (!flight_capped_said && pl.flight_window().capped) {
      fprintf(stderr, "jackdaw: note: %s\n", FlightJson(pl.flight_window())["note"].get<std::string>().c_str());
      flight_capped_said = true;
    }
    if (control_due) (*server)->Serve();
    if (metrics_due) metrics_endpoint->Serve();
    const uint64_t now = MonotonicNs();
    controller.Tick(now);
    const bool unlikely_fires = a.flight_unlikely && !unlikely.empty();
    if (!a.flight_dir.empty() && (!anomalies.empty() || unlikely_fires) && now - last_flight > 10'000'000'000ull) {
      const std::string path =
          anomalies.empty() ? fmt::format("{}/unlikely-{}.jdw", a.flight_dir, unlikely.back().request_id)
                            : fmt::format("{}/anomaly-{}.jdw", a.flight_dir, anomalies.back().request_id);
      auto saved = pl.SaveSnapshot(path, header());
      if (saved.ok())
        fprintf(stderr, "jackdaw: %s: flight recorder written to %s\n",
                anomalies.empty() ? "unlikely request" : "anomaly", path.c_str());
      else fprintf(stderr, "jackdaw: warning: %s\n", saved.status().message().c_str());
      last_flight = now;
    }
    if (a.duration > 0 && now - start >= static_cast<uint64_t>(a.duration * 1e9)) break;
    if (now - last_view < static_cast<uint64_t>(a.refresh * 1e9)) continue;
    if (const uint64_t n = controller.PidsNotFollowed(); n > warned_not_followed) {
      fprintf(stderr, "jackdaw: WARNING: %s\n", controller.FilterFullWarning().c_str());
      warned_not_followed = n;
    }
    const double secs = double(now - last_view) / 1e9;
    LivePipeline::Delay d = pl.TakeDelay();
    if (d.requests) last_delay_ns = d.max_ns, max_delay_ns = std::max(max_delay_ns, d.max_ns);
    const auto& ms = pl.model().stats();
    const double req_rate = double(ms.requests - last_requests) / secs;
    const double ev_rate = double(pl.records() - last_records) / secs;
    last_requests = ms.requests;
    last_records = pl.records();
    last_view = now;
    // Once a refresh, the free pages inside the heap go back to the
    // kernel: the thresholds above keep freed memory for reuse, and over a
    // long session at full load its fragments grew RSS by about 2 MB/s
    // with the live data steady. A pass a second costs far less than the
    // per-allocation trimming the thresholds avoid.
    malloc_trim(0);
    const auto clusters = pl.model().Running();
    if (traces) traces->Flush();
    if (store) {
      store->Flush();
      // A model snapshot every 10 s: a fleet's hosts a few rows each.
      if (ms.warmed_up && now - last_store_model >= 10'000'000'000ull) {
        store->AddModel("live", WallNowNs(), clickhouse::ClustersOf(clusters));
        last_store_model = now;
      }
    }
    const auto lost = controller.Losses();
    uint64_t lost_total = 0;
    for (uint64_t l : lost) lost_total += l;
    if (json) {
      nlohmann::json j = {{"t_s", double(now - start) / 1e9},
                          {"requests", ms.requests},
                          {"requests_per_s", req_rate},
                          {"events_per_s", ev_rate},
                          {"lost", lost_total},
                          {"lost_percent", LostPercent(lost_total, pl.records())},
                          {"incomplete", ms.incomplete},
                          {"sample_rate", sampler.rate()},
                          // the requests served: those recorded, complete or
                          // not, and the exchanges of connections left out
                          {"requests_estimated", ms.requests + ms.incomplete + cs.LeftOutExchanges()},
                          {"pipeline_delay_ms", d.requests ? double(d.max_ns) / 1e6 : 0.0},
                          {"rss_bytes", control::ResidentBytes()},
                          {"warmed_up", ms.warmed_up}};
      nlohmann::json cl = nlohmann::json::array();
      for (const auto& c : clusters) {
        const double n = double(std::max<uint64_t>(c.count, 1));
        cl.push_back({{"cluster", c.id},
                      {"requests", c.count},
                      {"requests_per_s", double(c.count - last_count[c.id]) / secs},
                      {"latency_p50_ms", c.latency.QuantileNs(0.5) / 1e6},
                      {"latency_p99_ms", c.latency.QuantileNs(0.99) / 1e6},
                      {"cpu_ms_per_request", c.demand_sum.cpu_ns / n / 1e6},
                      {"disk_bytes_per_request", c.demand_sum.disk_bytes / n},
                      {"net_bytes_per_request", c.demand_sum.net_bytes / n},
                      {"anomalous", c.anomalous},
                      {"representative", c.representative_text.substr(0, 200)}});
      }
      j["clusters"] = std::move(cl);
      nlohmann::json an = nlohmann::json::array();
      for (const auto& x : anomalies) an.push_back({{"request", x.request_id}, {"cluster", x.cluster_id}});
      j["new_anomalies"] = std::move(an);
      j["likelihood"] = WatchdogJson(**watchdog);
      nlohmann::json un = nlohmann::json::array();
      for (const auto& x : unlikely)
        un.push_back({{"request", x.request_id}, {"log_likelihood", x.log_likelihood}, {"events", x.events}});
      j["new_unlikely"] = std::move(un);
      if (store) j["clickhouse"] = SinkStatsJson(store->stats(), store->pending());
      if (traces) j["otlp"] = OtlpStatsJson(*traces);
      fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), json);
      fflush(json);
    }
    if (!IsStdout(a.json_out)) {
      std::string out = tty ? "\033[H\033[2J" : "";
      out += fmt::format(
          "jackdaw live {}  {:.0f} s  requests {} ({:.1f}/s)  incomplete {}  events {:.0f}/s  lost {} ({:.2f} %)  "
          "{}delay {} ms  rss {:.1f} MB{}\n",
          session_id, double(now - start) / 1e9, ms.requests, req_rate, ms.incomplete, ev_rate, lost_total,
          LostPercent(lost_total, pl.records()),
          sampler.rate() < 1 ? "sampling " + SampleShareText(sampler.rate()) + " of connections  " : "",
          d.requests ? Ms(double(d.max_ns)) : "-", double(control::ResidentBytes()) / 1e6,
          ms.warmed_up ? "" : "  (warming up)");
      out += fmt::format("{:>7} {:>9} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9}  {}\n", "cluster", "requests", "req/s",
                         "p50 ms", "p99 ms", "CPU/req", "disk/req", "net/req", "representative");
      for (size_t i = 0; i < clusters.size() && i < 20; ++i) {
        const auto& c = clusters[i];
        const double n = double(std::max<uint64_t>(c.count, 1));
        out += fmt::format("{:>6}{} {:>9} {:>8.1f} {:>10} {:>10} {:>10} {:>9} {:>9}  {}\n", c.id,
                           c.anomalous ? "!" : " ", c.count, double(c.count - last_count[c.id]) / secs,
                           Ms(c.latency.QuantileNs(0.5)), Ms(c.latency.QuantileNs(0.99)),
                           model::FormatResource(0, c.demand_sum.cpu_ns / n),
                           model::FormatResource(1, c.demand_sum.disk_bytes / n),
                           model::FormatResource(2, c.demand_sum.net_bytes / n),
                           c.representative_text.substr(0, 60));
      }
      for (const auto& x : anomalies)
        out += fmt::format("new anomaly: request {} founded cluster {}\n", x.request_id, x.cluster_id);
      {
        const auto ws = (*watchdog)->stats();
        out += ws.has_model ? fmt::format("likelihood ({} model, {} states): {} scored, {} below {}\n",
                                          ws.baseline ? "baseline" : "learned", ws.model_states, ws.scored,
                                          ws.unlikely, (*watchdog)->threshold())
                            : fmt::format("likelihood: warming up ({} of {} requests)\n", ws.learned,
                                          a.likelihood_warmup);
      }
      for (size_t i = 0; i < unlikely.size() && i < 10; ++i)
        out += fmt::format("unlikely: request {} log-likelihood {:.3f} over {} events\n", unlikely[i].request_id,
                           unlikely[i].log_likelihood, unlikely[i].events);
      if (unlikely.size() > 10) out += fmt::format("unlikely: {} more\n", unlikely.size() - 10);
      if (store) out += SinkStatsText(store->stats()) + "\n";
      fputs(out.c_str(), stdout);
    }
    fflush(stdout);
    for (const auto& c : clusters) last_count[c.id] = c.count;
    anomalies.clear();
    unlikely.clear();
  }
  cs.DisableAll();
  pl.Finish();
  if (!st.ok()) return PrintError(st.message()), 1;
  std::string store_text;
  if (store) {
    SendFinalModel(store.get(), pl.model(), nullptr, "live", WallNowNs());
    store_text = ", " + SinkStatsText(store->Finish());
  }
  if (traces) {
    Status exported = traces->Finish();
    if (!a.quiet || !exported.ok()) fputs(traces->Summary().c_str(), stderr);
    if (!exported.ok()) fprintf(stderr, "jackdaw: warning: %s\n", exported.message().c_str());
  }
  uint64_t lost_at_end = 0;
  for (uint64_t l : controller.Losses()) lost_at_end += l;
  // A session that lost records says so even with -q: the model has holes.
  if (!a.quiet || lost_at_end)
    fprintf(stderr,
            "jackdaw: live session %s ended: %" PRIu64 " events, %" PRIu64 " lost (%.2f %%), %" PRIu64
            " requests, %" PRIu64 " incomplete, %" PRIu64
            " served (with the exchanges of connections left out of the sample), %s of connections recorded at the "
            "end (%s at the least), peak rss %.1f MB%s\n",
            session_id.c_str(), pl.records(), lost_at_end, LostPercent(lost_at_end, pl.records()),
            pl.model().stats().requests, pl.model().stats().incomplete,
            pl.model().stats().requests + pl.model().stats().incomplete + cs.LeftOutExchanges(),
            SampleShareText(sampler.rate()).c_str(),
            SampleShareText(sample_min).c_str(), double(control::PeakResidentBytes()) / 1e6, store_text.c_str());
  return 0;
}

}  // namespace

Runner RegisterLive(CLI::App& app) {
  auto args = std::make_shared<LiveArgs>();
  CLI::App* sub = app.add_subcommand(
      "live",
      "Capture and model requests continuously: capture -> join -> canonicalize -> cluster, with a\n"
      "top-like view refreshed every second (clusters, request rates, latency p50/p99, demand per\n"
      "request, new anomalies). Control it while it runs with jackdaw ctl.\n"
      "  sudo jackdaw live --schema tcp-threadpool --pid $(pidof server)\n"
      "  sudo jackdaw live --schema testserver --usdt ./jackdaw-testserver --pid $(pidof jackdaw-testserver)\n"
      "  sudo jackdaw live --schema tcp-threadpool --json - > model.jsonl\n"
      "  sudo jackdaw live --schema tcp-threadpool --cgroup system.slice/nginx.service --metrics 127.0.0.1:9464\n"
      "  sudo jackdaw live --schema tcp-threadpool --comm memcached\n"
      "The model adapts: a new kind of request founds a new cluster at once; a cluster that has\n"
      "received no request for --idle seconds (trace time) is dropped.");
  sub->add_option("-s,--schema", args->schema, "schema name (testserver, tcp-threadpool) or path")
      ->type_name("SCHEMA")
      ->required();
  AddCaptureOptions(sub, &args->cap, "model");
  sub->add_option("--sample", args->sample,
                  "when the load outruns the reader, model a share of connections recorded whole instead of\n"
                  "every connection in part: auto (all while the rings keep up, halved whenever they lose\n"
                  "records or fill past half, doubled after 5 calm seconds), RATE (0.1: one connection in\n"
                  "ten), or off. Counts in the view and JSON are of the connections recorded (sample_rate)")
      ->type_name("auto|RATE|off")
      ->capture_default_str();
  sub->add_option("--backend", args->backend,
                  "capture mechanism: bpf, kmod (the jackdaw.ko module), auto (eBPF when it loads, else the "
                  "module); see jackdaw record --help")
      ->type_name("bpf|kmod|auto")
      ->capture_default_str()
      ->check(CLI::IsMember({"bpf", "kmod", "auto"}).description(""));
  sub->add_option("--duration", args->duration, "stop after this long (without it: Ctrl-C)")
      ->type_name("DURATION")
      ->transform(DurationSeconds(0, kMaxDurationS, true));
  AddJsonLines(sub, &args->json_out, "one JSON line per refresh", "instead of the view");
  sub->add_flag("-q,--quiet", args->quiet, "no status lines on stderr (warnings and losses are still said)");
  CLI::Option* refresh = sub->add_option("--refresh", args->refresh, "how often the view (or a JSON line) is written")
                             ->type_name("DURATION")
                             ->capture_default_str()
                             ->transform(DurationSeconds(0.1, 3600, false));
  // --interval was live's refresh; in interactions it was the class window.
  HiddenAlias(sub, "--interval", args->refresh, refresh);
  AddReorderWindow(sub, &args->window, 0.01, 5, false);
  sub->add_option("--drain", args->drain,
                  "longest nap between two drains of the rings: longer costs less CPU per request\n"
                  "(fewer, larger batches) and adds to the pipeline delay; naps are shorter while a ring\n"
                  "fills fast (ctl status: drain_nap_ms); ctl requests are served at once")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0.01, 1, false));
  sub->add_option("--idle", args->idle, "drop clusters idle this long (0: never)")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0, kMaxDurationS, false));
  sub->add_option("--warmup", args->warmup, "requests clustered as a batch before streaming")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(2, 1 << 20));
  sub->add_option("--warmup-time", args->warmup_s, "or this long of requests, whichever first")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0, 3600, false));
  sub->add_option("--flight", args->flight,
                  "how much of the newest records the flight recorder keeps (jackdaw ctl snapshot FILE)")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0, 600, false));
  sub->add_option("--flight-size", args->flight_size,
                  "most memory the flight recorder takes (K, M, G): at a high event rate it keeps the\n"
                  "newest records, fewer seconds than --flight (ctl status and snapshots say so)")
      ->type_name("SIZE")
      ->capture_default_str();
  sub->add_option("--flight-dir", args->flight_dir, "write the flight recorder here when an anomaly fires")
      ->type_name("DIR");
  sub->add_flag("--flight-unlikely", args->flight_unlikely,
                "with --flight-dir: an unlikely request (--likelihood-threshold) writes it too (unlikely-ID.jdw)");
  sub->add_option("--metrics", args->metrics,
                  "serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics: per schema and\n"
                  "cluster request counts, latency histograms, CPU/disk/net demand, anomalies; per probe\n"
                  "group events and losses. e.g. 127.0.0.1:9464 (:9464 for every interface, with a warning)")
      ->type_name("ADDR:PORT");
  AddClickHouseOptions(sub, &args->clickhouse);
  AddOtlpOptions(sub, &args->otlp);
  sub->add_option("--baseline", args->baseline,
                  "score every request against the likelihood model of this `jackdaw analyze --json` file\n"
                  "(same schema) instead of one learned from the session's first requests")
      ->type_name("FILE");
  sub->add_option("--likelihood-warmup", args->likelihood_warmup,
                  "without --baseline: requests learned before the first is scored; the model is learned\n"
                  "again every 4,096 requests after (docs/likelihood.md)")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(10, 1 << 20));
  sub->add_option("--likelihood-threshold", args->likelihood_threshold,
                  "a request whose log-likelihood (mean log-probability per canonical event, <= 0) is below\n"
                  "this is reported as unlikely (view, JSON new_unlikely, jackdaw_schema_unlikely_requests_total);\n"
                  "default: calibrated at every learning, below all but 0.1 % of the requests learned (a\n"
                  "--baseline: its own calibration)")
      ->type_name("LOGPROB")
      ->check(FiniteRange(-1000, 0, false, ""));
  sub->add_option("--run-dir", args->run_dir, "directory of control sockets")->type_name("DIR")->capture_default_str();
  auto argv0 = SelfPathAtParse(sub);
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
