// jackdaw analyze: requests (temporal join) and the workload model.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <iostream>

#include "cli/commands.h"
#include "join/extractor.h"
#include "model/streaming_model.h"
#include "report/progress_bar.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

struct AnalyzeArgs {
  std::string file;
  std::string schema;
  std::string requests_out, json_out, csv_dir, perfetto_out, html_out;
  double threshold = 0;
  double window_s = 1.0;
  bool no_refine = false;
  uint32_t warmup = 4096;
  uint32_t sample = 16;
  bool salvage = false;
  bool quiet = false;
};

int Run(const AnalyzeArgs& a, const std::string& argv0) {
  auto reader = trace::TraceReader::Open(a.file, {.allow_truncated = a.salvage});
  if (!reader.ok()) {
    PrintError(reader.status().message() + (a.salvage ? "" : " (--salvage analyses what is intact)"));
    return 1;
  }
  if (!(*reader)->damage().ok()) fprintf(stderr, "jackdaw: warning: %s\n", (*reader)->damage().message().c_str());
  auto schema = schema::LoadSchema(a.schema, schema::DefaultSchemaDirs(argv0));
  if (!schema.ok()) {
    PrintError(schema.status().message());
    return 1;
  }
  join::Options jo;
  jo.reorder_window = static_cast<uint64_t>(a.window_s * 1e9);
  // One streaming path, as `jackdaw live` runs it: requests go from the join
  // to --requests and into the streaming model as they complete, so memory
  // is bounded by the model, not by the trace.
  model::StreamingModelOptions so;
  so.model.cluster.threshold = a.threshold;
  so.model.cluster.refine = !a.no_refine;
  so.warmup_requests = a.warmup;
  so.sample_per_cluster = a.sample;
  report::ProgressBar bar;
  if (!a.quiet) so.model.cluster.progress = bar.Callback();
  auto streaming = model::StreamingModel::Create(so);
  if (!streaming.ok()) return PrintError(streaming.status().message()), 1;
  model::StreamingModel& sm = **streaming;
  std::unique_ptr<FILE, int (*)(FILE*)> requests_file(nullptr, fclose);
  if (!a.requests_out.empty()) {
    requests_file.reset(fopen(a.requests_out.c_str(), "w"));
    if (!requests_file)
      return PrintError("cannot write " + a.requests_out + ": " + strerror(errno) +
                        " (choose a writable path for --requests)"), 1;
  }
  std::string line;
  uint64_t written = 0;
  bool write_failed = false;
  join::Stats st;
  Status extracted = join::ExtractRequests(
      **reader, *schema, jo,
      [&](model::Request&& r) {
        if (requests_file) {
          line.clear();
          join::WriteRequestJson(&line, r);
          if (fwrite(line.data(), 1, line.size(), requests_file.get()) != line.size()) write_failed = true;
          ++written;
        }
        sm.Add(std::move(r));
      },
      &st);
  if (!extracted.ok()) return PrintError(extracted.message()), 1;
  for (const auto& w : st.warnings) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  fprintf(stderr, "jackdaw: %s\n", join::FormatSummary(st).c_str());
  if (requests_file) {
    if (fflush(requests_file.get()) != 0 || write_failed)
      return PrintError("writing " + a.requests_out + " failed: " + strerror(errno) + " (disk full?)"), 1;
    fprintf(stderr, "jackdaw: %llu requests written to %s\n", static_cast<unsigned long long>(written),
            a.requests_out.c_str());
  }
  if (sm.stats().requests == 0) {
    PrintError("no requests found: check that the schema's seed events occur in this trace (jackdaw dump " +
               a.file + " --summary lists what it holds)");
    return 1;
  }
  Status finished = sm.Finish();
  if (!finished.ok()) return PrintError(finished.message()), 1;
  std::vector<model::Request> requests;  // the retained sample, aligned with model->requests
  auto model = sm.Snapshot(&requests);
  bar.Finish();
  if (!model.ok()) return PrintError(model.status().message()), 1;
  if (st.cpu_observed_ns)
    model->accounted_cpu_fraction = double(st.cpu_charged_ns + st.softirq_charged_ns) / double(st.cpu_observed_ns);
  if (sm.warmed_up())
    fprintf(stderr,
            "jackdaw: streamed %llu requests (model from the first %u, then online; %llu kept as "
            "cluster samples for the reports below)\n",
            static_cast<unsigned long long>(sm.stats().requests), a.warmup,
            static_cast<unsigned long long>(requests.size()));
  report::WriteTextReport(*model, std::cout);
  struct Out {
    const std::string& path;
    const char* what;
    std::function<Status()> write;
  };
  const Out outs[] = {
      {a.json_out, "model (JSON)", [&] { return report::WriteJsonReport(*model, a.json_out); }},
      {a.csv_dir, "CSV tables", [&] { return report::WriteCsvReports(*model, a.csv_dir); }},
      {a.perfetto_out, "Perfetto trace (open in ui.perfetto.dev)",
       [&] { return report::WritePerfettoTrace(*model, requests, a.perfetto_out); }},
      {a.html_out, "HTML report", [&] { return report::WriteHtmlReport(*model, requests, a.html_out); }},
  };
  for (const auto& o : outs) {
    if (o.path.empty()) continue;
    Status s = o.write();
    if (!s.ok()) return PrintError(s.message()), 1;
    fprintf(stderr, "jackdaw: %s written to %s\n", o.what, o.path.c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterAnalyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* sub = app.add_subcommand(
      "analyze",
      "Extract requests from a trace with a schema (Magpie's temporal join), then canonicalize,\n"
      "cluster and model them. Prints the cluster table, anomalies and latency breakdown.\n"
      "  jackdaw analyze web.jdw --schema tcp-threadpool\n"
      "  jackdaw analyze web.jdw --schema testserver --html report.html --perfetto trace.json\n"
      "  jackdaw analyze web.jdw --schema ./my.schema --requests requests.jsonl --json model.json\n"
      "Schemas by name are looked up beside the binary (schemas/NAME.schema); a path works too.");
  sub->add_option("file", args->file, "trace file (.jdw)")->required();
  sub->add_option("-s,--schema", args->schema, "schema name (testserver, tcp-threadpool) or path")->required();
  sub->add_option("--requests", args->requests_out, "write the requests as JSON lines");
  sub->add_option("--json", args->json_out, "write the whole model as JSON");
  sub->add_option("--csv", args->csv_dir, "write one CSV per table into this directory");
  sub->add_option("--perfetto", args->perfetto_out, "write a Perfetto/Chrome trace of requests and canonical forms");
  sub->add_option("--html", args->html_out, "write a self-contained HTML report");
  sub->add_option("--threshold", args->threshold, "clustering distance threshold (default: derived from the data)");
  sub->add_option("--window", args->window_s, "reorder window in seconds")->capture_default_str();
  sub->add_flag("--no-refine", args->no_refine, "skip the reassignment pass after incremental clustering");
  sub->add_option("--warmup", args->warmup,
                  "requests clustered as a batch (threshold, normalisation) before the rest streams online")
      ->capture_default_str()
      ->check(CLI::Range(2u, 1u << 24));
  sub->add_option("--sample", args->sample, "requests kept per cluster for the reports (memory bound)")
      ->capture_default_str()
      ->check(CLI::Range(2u, 4096u));
  sub->add_flag("--salvage", args->salvage, "analyse the intact part of a damaged trace");
  sub->add_flag("-q,--quiet", args->quiet, "no progress bar");
  auto argv0 = std::make_shared<std::string>();
  sub->preparse_callback([argv0](size_t) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    *argv0 = n > 0 ? std::string(buf, n) : "jackdaw";
  });
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
