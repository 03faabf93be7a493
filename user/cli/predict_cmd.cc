// jackdaw predict: capacity planning from the workload model (Magpie OSDI
// 2004 §4, HotOS 2003 §3; AppModel SIGMETRICS 2010). The trace is joined and
// modelled as `analyze` does; each kind's recorded requests are replayed
// through a simulation of the machine (user/predict/) under the load and
// hardware asked for, and under the recorded ones as a self-check.
#include <algorithm>
#include <cinttypes>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/self_path.h"
#include "cli/usage.h"
#include "common/safe_file.h"
#include "join/extractor.h"
#include "model/streaming_model.h"
#include "predict/calibrate.h"
#include "predict/report.h"
#include "predict/scenario.h"
#include "predict/simulator.h"
#include "predict/workload.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

struct PredictArgs {
  std::string file, schema, json_out;
  uint32_t clients = 0, recorded_clients = 0, cpus = 0;
  double rate = 0, think_s = 0, cpu_speed = 1, disk_speed = 1;
  std::vector<std::string> scales, mixes;
  uint64_t requests = 200000, seed = 1;
  double window_s = 1.0;
  std::string other_work = "share";
  std::string scheduler = "eevdf";
  bool cpus_given = false;
};

// The trace's requests, joined and clustered as `analyze` does (the same
// streaming model and defaults, so kinds carry analyze's labels).
StatusOr<predict::RecordedWorkload> Record(const PredictArgs& a, const std::string& argv0) {
  auto reader = trace::TraceReader::OpenForCli(a.file, false);
  if (!reader.ok()) return reader.status();
  auto schema = schema::LoadSchema(a.schema, schema::DefaultSchemaDirs(argv0));
  if (!schema.ok()) return schema.status();
  predict::WorkloadCollector collector;
  model::StreamingModelOptions so;
  auto streaming = model::StreamingModel::Create(
      so, [&](const model::StreamingModel::Assigned& x) { collector.Assign(x.request_id, x.cluster_id); });
  if (!streaming.ok()) return streaming.status();
  model::StreamingModel& sm = **streaming;
  join::Options jo;
  jo.reorder_window = static_cast<uint64_t>(a.window_s * 1e9);
  join::Stats st;
  Status joined = join::ExtractRequests(**reader, *schema, jo, [&](model::Request&& r) {
    if (!r.incomplete) collector.Add(r);
    sm.Add(std::move(r));
  }, &st);
  if (!joined.ok()) return joined;
  if (sm.stats().requests == 0)
    return ErrStatus("no complete requests in %s under schema %s; check the schema matches the recording (jackdaw "
                     "dump %s --summary lists what it holds)", a.file.c_str(), a.schema.c_str(), a.file.c_str());
  RETURN_IF_ERROR(sm.Finish());
  std::vector<std::pair<uint64_t, std::string>> labels;
  if (sm.warmed_up()) {
    // Running() is in the order Snapshot() labels clusters (largest first).
    const auto running = sm.Running();
    for (size_t k = 0; k < running.size(); ++k) labels.push_back({running[k].id, "c" + std::to_string(k)});
  } else {
    // A trace within the model's warm-up is one batch model: its requests
    // carry their cluster.
    ASSIGN_OR_RETURN(model::WorkloadModel wm, sm.Snapshot());
    for (const model::RequestSummary& r : wm.requests) collector.Assign(r.id, r.cluster);
    for (const model::ClusterSummary& c : wm.clusters) labels.push_back({c.id, c.label});
  }
  const uint32_t cpus = (*reader)->meta().ncpus;
  if (sm.stats().incomplete)
    fprintf(stderr, "jackdaw: %" PRIu64 " incomplete requests left out (the capture lost records)\n",
            sm.stats().incomplete);
  return collector.Finish(labels, cpus);
}

std::string Conditions(uint32_t clients, double rate, uint32_t cpus, const char* clients_note) {
  std::ostringstream s;
  if (rate > 0) s << rate << " req/s (Poisson)";
  else s << clients << (clients == 1 ? " client" : " clients") << clients_note;
  s << ", " << cpus << (cpus == 1 ? " CPU" : " CPUs");
  return s.str();
}

// EEVDF's base slice as the kernel scales it with the CPU count
// (sysctl_sched_base_slice: 0.75 ms x (1 + log2 CPUs), CPUs capped at 8).
double BaseSliceNs(uint32_t cpus) {
  uint32_t log2 = 0;
  for (uint32_t n = std::min<uint32_t>(cpus, 8); n > 1; n >>= 1) ++log2;
  return 0.75e6 * (1 + log2);
}

int Usage(const std::string& message) {
  PrintError(message);
  return kExitUsage;
}

int Run(const PredictArgs& a, const std::string& argv0) {
  // Argument errors first: one line each, exit 2, before any work.
  std::vector<predict::Scale> scales;
  std::vector<predict::MixShare> mix;
  for (const std::string& s : a.scales) {
    auto sc = predict::ParseScale(s);
    if (!sc.ok()) return Usage(sc.status().message());
    scales.push_back(*sc);
  }
  for (const std::string& m : a.mixes) {
    auto ms = predict::ParseMix(m);
    if (!ms.ok()) return Usage(ms.status().message());
    mix.push_back(*ms);
  }
  if (a.cpus_given && a.cpus == 0) return Usage("--cpus 0: a machine needs a CPU; give --cpus 1 or more");
  if (a.clients && a.rate > 0) return Usage("--clients and --rate both given; give one (closed or open loop)");
  if (!a.json_out.empty()) {
    if (Status st = CheckOutput(a.json_out); !st.ok()) return PrintError("--json: " + st.message()), 1;
  }

  auto recorded = Record(a, argv0);
  if (!recorded.ok()) return PrintError(recorded.status().message()), 1;
  const predict::RecordedWorkload& w = *recorded;
  if (w.kinds.empty() || w.duration_ns() <= 0)
    return PrintError("the recording has too few requests to model a workload; record longer"), 1;
  if (w.cpus == 0) return PrintError("the trace does not say how many CPUs it was recorded on; give --cpus"), 1;
  auto kinds = predict::MakeKinds(w, scales, mix);
  if (!kinds.ok()) return Usage(kinds.status().message());
  auto recorded_kinds = predict::MakeKinds(w, {}, {});
  if (!recorded_kinds.ok()) return PrintError(recorded_kinds.status().message()), 1;

  const uint32_t rec_clients = a.recorded_clients ? a.recorded_clients : w.EstimatedClients();
  const double client_gap = w.ClientGapNs(rec_clients);
  fprintf(stderr,
          "jackdaw: %" PRIu64 " requests in %zu kinds over %.3f s on %u CPUs; %.2f in flight on average -> %u "
          "closed-loop clients%s, %.3f ms between a client's requests; wake-up latency %.3f ms\n",
          w.requests, w.kinds.size(), w.duration_ns() / 1e9, w.cpus, w.mean_in_flight(), rec_clients,
          a.recorded_clients ? " (--recorded-clients)" : "", client_gap / 1e6, w.wakeup_ns / 1e6);

  predict::SimConfig self;
  self.cpus = w.cpus;
  self.clients = rec_clients;
  self.client_gap_ns = client_gap;
  self.wakeup_ns = w.wakeup_ns;
  const bool eevdf = a.scheduler == "eevdf";
  self.woken_slice_ns = eevdf ? BaseSliceNs(w.cpus) : 0;
  self.requests = a.requests;
  self.seed = a.seed;
  predict::PredictReport report;
  const predict::OtherWork model = a.other_work == "threads" ? predict::OtherWork::kThreads
                                   : a.other_work == "none"  ? predict::OtherWork::kNone
                                                             : predict::OtherWork::kShare;
  report.other_work = predict::Calibrate(model, *recorded_kinds, self, w.cpu_stretch());
  report.other_work.Apply(&self);
  const predict::SimResult self_check = predict::Simulate(*recorded_kinds, self);

  predict::SimConfig c = self;
  c.cpus = a.cpus_given ? a.cpus : w.cpus;
  c.woken_slice_ns = eevdf ? BaseSliceNs(c.cpus) : 0;
  c.cpu_speed = a.cpu_speed;
  c.disk_speed = a.disk_speed;
  c.think_ns = a.think_s * 1e9;
  if (a.rate > 0) {
    c.clients = 0;
    c.rate_per_s = a.rate;
  } else if (a.clients) {
    c.clients = a.clients;
  }
  report.other_work.Apply(&c);  // on the predicted machine's CPUs
  report.prediction = predict::Simulate(*kinds, c);
  // A recording that shared its CPUs: the other model of that work too.
  const bool shared = report.other_work.other_cpus > 0.05 || report.other_work.background_threads > 0.05;
  if (shared && model != predict::OtherWork::kNone) {
    const predict::OtherWork other =
        model == predict::OtherWork::kShare ? predict::OtherWork::kThreads : predict::OtherWork::kShare;
    predict::SimConfig rec = self;
    rec.cpu_capacity = rec.background_threads = 0;
    report.alternative_work = predict::Calibrate(other, *recorded_kinds, rec, w.cpu_stretch());
    predict::SimConfig alt = c;
    report.alternative_work.Apply(&alt);
    report.alternative = predict::Simulate(*kinds, alt);
  }
  std::string scenario = Conditions(c.clients, c.rate_per_s, c.cpus, "");
  if (a.cpu_speed != 1) scenario += ", CPU speed x" + std::to_string(a.cpu_speed).substr(0, 5);
  if (a.disk_speed != 1) scenario += ", disk speed x" + std::to_string(a.disk_speed).substr(0, 5);
  if (a.think_s > 0) scenario += ", think " + std::to_string(a.think_s * 1e3).substr(0, 7) + " ms";
  for (const std::string& s : a.scales) scenario += ", " + s;
  for (const std::string& m : a.mixes) scenario += ", mix " + m;
  report.scenario = scenario;
  report.recorded_conditions =
      Conditions(rec_clients, 0, w.cpus, a.recorded_clients ? "" : " (estimated)");
  report.recorded = predict::RecordedFigures(w);
  report.self_check = predict::SimulatedFigures(self_check);
  predict::WriteText(report, std::cout);
  if (!a.json_out.empty()) {
    Status written = WriteOutput(a.json_out, predict::ToJson(report).dump(1) + "\n");
    if (!written.ok()) return PrintError(written.message()), 1;
    fprintf(stderr, "jackdaw: prediction (JSON) written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterPredict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand(
      "predict",
      "Capacity planning: replay each kind's recorded requests (CPU bursts, disk I/Os, waits, the\n"
      "synchronization of their threads) through a simulation of the machine under another load or\n"
      "hardware, and print per kind throughput, latency percentiles and the bottleneck, beside a\n"
      "self-check (the recorded conditions simulated against what was recorded).\n"
      "  jackdaw predict web.jdw --schema testserver --clients 8\n"
      "  jackdaw predict web.jdw --schema testserver --clients 4 --cpus 1 --scale c0:cpu=2\n"
      "  jackdaw predict web.jdw --schema testserver --rate 50 --mix c1=0.5 --json what-if.json");
  sub->add_option("file", args->file, "trace file (.jdw)")->type_name("FILE")->required();
  sub->add_option("-s,--schema", args->schema, "schema the trace is analysed with (name or path), as for analyze")
      ->type_name("SCHEMA")
      ->required();
  sub->add_option("--clients", args->clients,
                  "closed-loop clients, each sending its next request when the last is answered\n"
                  "(default: as many as the recording had, estimated from its requests in flight)")
      ->type_name("N")
      ->check(IntRange(1, 100000));
  sub->add_option("--rate", args->rate, "open-loop Poisson arrivals per second instead of clients")
      ->type_name("RATE")
      ->check(FiniteRange(0, 1e7, true, " per second"));
  sub->add_option("--think", args->think_s,
                  "mean think time each client adds between requests (exponential; e.g. 10ms); the\n"
                  "time clients took between requests in the recording is always kept")
      ->type_name("DURATION")
      ->transform(DurationSeconds(0, 3600, false));
  sub->add_option("--cpus", args->cpus, "CPUs of the simulated machine (default: the recording's)")
      ->type_name("N")
      ->each([a = args.get()](const std::string&) { a->cpus_given = true; });
  sub->add_option("--cpu-speed", args->cpu_speed, "CPU speed relative to the recording's (2: twice as fast)")
      ->type_name("FACTOR")
      ->capture_default_str()
      ->check(FiniteRange(0, 1000, true, ""));
  sub->add_option("--disk-speed", args->disk_speed, "disk speed relative to the recording's")
      ->type_name("FACTOR")
      ->capture_default_str()
      ->check(FiniteRange(0, 1000, true, ""));
  sub->add_option("--scale", args->scales,
                  "multiply one kind's cpu, disk or wait demand by F (e.g. c0:cpu=0.7); repeatable")
      ->type_name("KIND:RESOURCE=F")
      ->take_all();
  sub->add_option("--mix", args->mixes,
                  "that kind is SHARE (0-1) of the arrivals, the others keep their recorded\n"
                  "proportions of the rest; repeatable")
      ->type_name("KIND=SHARE")
      ->take_all();
  sub->add_option("--requests", args->requests, "requests simulated (after a tenth more of warm-up)")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(100, 100'000'000));
  sub->add_option("--recorded-clients", args->recorded_clients,
                  "clients the recording had, for the self-check (default: estimated)")
      ->type_name("N")
      ->check(IntRange(1, 100000));
  sub->add_option("--scheduler", args->scheduler,
                  "the simulated scheduler: eevdf (processor sharing, a woken thread's first slice run\n"
                  "ahead of threads that kept running, as Linux places it) or ps (plain processor sharing)")
      ->type_name("eevdf|ps")
      ->capture_default_str()
      ->check(CLI::IsMember({"eevdf", "ps"}).description(""));
  sub->add_option("--other-work", args->other_work,
                  "how other work on the recorded machine's CPUs (seen as the requests' run-queue waits)\n"
                  "is calibrated and kept: share (it took some CPUs, as another cgroup does), threads\n"
                  "(always-runnable threads beside the requests'), none (the requests alone)")
      ->type_name("share|threads|none")
      ->capture_default_str()
      ->check(CLI::IsMember({"share", "threads", "none"}).description(""));
  sub->add_option("--seed", args->seed, "random seed of the simulation (same seed, same answer)")
      ->type_name("N")
      ->capture_default_str();
  Output(sub->add_option("-o,--output,--json", args->json_out, "write the prediction and the self-check as JSON")
             ->type_name("FILE"));
  AddReorderWindow(sub, &args->window_s);
  auto argv0 = SelfPathAtParse(sub);
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
