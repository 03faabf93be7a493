// jackdaw analyze: requests (temporal join) and the workload model.
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "join/extractor.h"
#include "model/workload_model.h"
#include "report/progress_bar.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

// Every join counter: {"name": {"value", "severity", "description"}}, in
// the table's order.
nlohmann::ordered_json JoinStatsJson(const join::Stats& st) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const join::StatInfo& info : join::kStatsInfo)
    j[info.name] = {{"value", st.*info.field},
                    {"severity", join::SeverityName(info.severity)},
                    {"description", info.description}};
  return j;
}

struct AnalyzeArgs {
  std::string file;
  std::string schema;
  std::string requests_out, json_out, csv_dir, perfetto_out, html_out;
  double threshold = 0;
  double window_s = 1.0;
  bool no_refine = false;
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
  auto extraction = join::ExtractRequests(**reader, *schema, jo);
  if (!extraction.ok()) {
    PrintError(extraction.status().message());
    return 1;
  }
  const auto& st = extraction->stats;
  for (const auto& w : st.warnings) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  fprintf(stderr, "jackdaw: %s\n", join::FormatSummary(st).c_str());
  // Every counter of evidence the join could not use: the user must know
  // what the requests lack. (All counters, info too, are in --json.)
  for (const join::StatInfo& info : join::kStatsInfo) {
    const uint64_t v = st.*info.field;
    if (info.severity == join::Severity::kInfo || v == 0) continue;
    fprintf(stderr, "jackdaw: %s: %s = %" PRIu64 ": %s\n", join::SeverityName(info.severity), info.name, v,
            info.description);
  }
  const auto& requests = extraction->requests;
  if (!a.requests_out.empty()) {
    Status s = join::WriteRequestsJsonl(a.requests_out, requests);
    if (!s.ok()) return PrintError(s.message()), 1;
    fprintf(stderr, "jackdaw: %zu requests written to %s\n", requests.size(), a.requests_out.c_str());
  }
  if (requests.empty()) {
    PrintError("no requests found: check that the schema's seed events occur in this trace (jackdaw dump " +
               a.file + " --summary lists what it holds)");
    return 1;
  }
  model::ModelOptions mo;
  if (st.cpu_observed_ns)
    mo.accounted_cpu_fraction = double(st.cpu_charged_ns + st.softirq_charged_ns) / double(st.cpu_observed_ns);
  mo.cluster.threshold = a.threshold;
  mo.cluster.refine = !a.no_refine;
  report::ProgressBar bar;
  if (!a.quiet) mo.cluster.progress = bar.Callback();
  auto model = model::BuildModel(requests, mo);
  bar.Finish();
  if (!model.ok()) return PrintError(model.status().message()), 1;
  report::WriteTextReport(*model, std::cout);
  struct Out {
    const std::string& path;
    const char* what;
    std::function<Status()> write;
  };
  const Out outs[] = {
      {a.json_out, "model (JSON)",
       [&] {
         nlohmann::ordered_json j = report::ModelToJson(*model);
         j["join"] = JoinStatsJson(st);
         return report::WriteJsonFile(j, a.json_out);
       }},
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
