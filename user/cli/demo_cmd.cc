// jackdaw demo: the whole pipeline on the built-in test server, no arguments.
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <iostream>

#include "capture/session.h"
#include "cli/commands.h"
#include "join/extractor.h"
#include "model/workload_model.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"
#include "validate/experiment.h"

namespace jackdaw::cli {
namespace {

std::string SelfPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "jackdaw";
}

int Run(const std::string& out_dir, int requests) {
  if (IsStdout(out_dir))
    return PrintError("-o -: the demo writes a trace and its reports, several files, not one stream: give -o DIR"),
           kExitUsage;
  Status priv = capture::CheckPrivileges();
  if (!priv.ok()) return PrintError(priv.message()), 2;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return PrintError("cannot create " + out_dir + ": " + ec.message()), 1;
  const std::string out = std::filesystem::absolute(out_dir).string();
  const std::string self = SelfPath();
  validate::RunOptions ro;
  ro.bin_dir = self.substr(0, self.rfind('/'));
  ro.work_dir = out;
  validate::Workload w{"demo", "A/B/E/F", "A:1,B:1,E:1,F:1", 5, requests};
  printf("== jackdaw demo\n");
  printf("1. Recording the built-in test server (jackdaw-testserver: thread pool, Magpie's request types\n"
         "   A longspin, B shortspin, E parspin, F rpcspin) while jackdaw-load sends %d requests\n"
         "   from 5 concurrent clients...\n", requests);
  fflush(stdout);
  auto run = validate::RecordWorkload(ro, w);
  if (!run.ok()) return PrintError(run.status().message()), 1;
  printf("   recorded in %.1f s: %s\n", run->wall_s, run->trace.c_str());
  printf("2. Extracting requests with the testserver schema (the server's USDT events plus kernel events,\n"
         "   as Magpie used IIS's events)...\n");
  auto reader = trace::TraceReader::Open(run->trace);
  if (!reader.ok()) return PrintError(reader.status().message()), 1;
  auto schema = schema::LoadSchema("testserver", schema::DefaultSchemaDirs(self));
  if (!schema.ok()) return PrintError(schema.status().message()), 1;
  auto ex = join::ExtractRequests(**reader, *schema, join::Options{});
  if (!ex.ok()) return PrintError(ex.status().message()), 1;
  printf("   %s\n", join::FormatSummary(ex->stats).c_str());
  const std::string requests_path = out + "/requests.jsonl";
  (void)join::WriteRequestsJsonl(requests_path, ex->requests);
  printf("3. Canonicalizing and clustering...\n\n");
  fflush(stdout);
  model::ModelOptions mo;
  const auto& st = ex->stats;
  if (st.cpu_observed_ns)
    mo.accounted_cpu_fraction = join::AccountedCpuFraction(st);
  auto model = model::BuildModel(ex->requests, mo);
  if (!model.ok()) return PrintError(model.status().message()), 1;
  // Ground truth from the load driver, matched by client port.
  auto truth = validate::ReadGroundTruth(run->truth);
  report::TruthLabels labels;
  if (truth.ok()) {
    std::unordered_map<uint16_t, std::string> by_port;
    for (const auto& t : *truth) by_port[t.client_port] = t.type;
    for (const auto& r : ex->requests)
      for (const auto& c : r.connections) {
        auto p = c.remote.rfind(':');
        auto it = p == std::string::npos ? by_port.end() : by_port.find(uint16_t(atoi(c.remote.c_str() + p + 1)));
        if (it != by_port.end()) labels[r.id] = it->second;
      }
  }
  report::TextReportOptions to;
  to.truth = &labels;
  to.max_anomalies = 5;
  report::WriteTextReport(*model, std::cout, to);
  const std::string html = out + "/report.html", perfetto = out + "/trace.perfetto.json";
  report::HtmlReportOptions ho;
  ho.truth = &labels;
  ho.title = "jackdaw demo: test server, mixed A/B/E/F";
  Status s1 = report::WriteHtmlReport(*model, ex->requests, html, ho);
  Status s2 = report::WritePerfettoTrace(*model, ex->requests, perfetto);
  if (!s1.ok()) return PrintError(s1.message()), 1;
  if (!s2.ok()) return PrintError(s2.message()), 1;
  printf("\nOutputs:\n  trace            %s\n  ground truth     %s\n  requests         %s\n"
         "  HTML report      %s\n  Perfetto trace   %s  (open in https://ui.perfetto.dev)\n",
         run->trace.c_str(), run->truth.c_str(), requests_path.c_str(), html.c_str(), perfetto.c_str());
  printf("Next:\n  %s analyze %s --schema tcp-threadpool   (the same trace, kernel events only)\n"
         "  sudo %s reproduce --quick   (the paper's validation tables)\n",
         self.c_str(), run->trace.c_str(), self.c_str());
  return 0;
}

}  // namespace

Runner RegisterDemo(CLI::App& app) {
  auto out = std::make_shared<std::string>("jackdaw-demo");
  auto requests = std::make_shared<int>(200);
  CLI::App* sub = app.add_subcommand(
      "demo",
      "The whole pipeline on the built-in test server (needs root): record a mixed workload,\n"
      "extract requests from kernel events, cluster them, print the model and anomalies,\n"
      "write an HTML report and a Perfetto trace.");
  sub->add_option("-o,--output-dir,--output", *out, "where the trace and reports go")
      ->type_name("DIR")
      ->capture_default_str();
  sub->add_option("-n,--requests", *requests, "requests to send")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(1, 1'000'000'000));
  return [out, requests] { return Run(*out, *requests); };
}

}  // namespace jackdaw::cli
