// jackdaw reproduce: Magpie's validation (OSDI'04 Tables 2-5) on this machine.
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "capture/session.h"
#include "common/safe_file.h"
#include "cli/commands.h"
#include "schema/schema.h"
#include "validate/experiment.h"
#include "validate/real_interactions.h"
#include "validate/real_suite.h"

namespace jackdaw::cli {
namespace {

struct ReproduceArgs {
  bool quick = false;
  int requests = 500;
  std::string work_dir = "/var/tmp/jackdaw-reproduce";
  std::string results;
  std::vector<std::string> schemas = {"testserver", "tcp-threadpool"};
  bool verbose = false;
  std::vector<std::string> only;
  bool keep_traces = false;
  bool reanalyze = false;
  bool real = false;
  int repeat = 1;
  bool requests_given = false, schemas_given = false;
};

std::string SelfPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "jackdaw";
}

nlohmann::json ToJson(const validate::SchemaResult& r) {
  nlohmann::json clusters = nlohmann::json::array();
  for (const auto& c : r.clusters)
    clusters.push_back({{"label", c.label}, {"size", c.size}, {"composition", c.composition}, {"mean_cpu_ms", c.mean_cpu_ms}});
  return {{"schema", r.schema}, {"sent", r.sent}, {"extracted", r.extracted}, {"matched", r.matched},
          {"exact", r.exact}, {"extra", r.unmatched}, {"extra_setup", r.setup}, {"overhang", r.overhang},
          {"merged", r.merged}, {"split", r.split}, {"missing", r.missing}, {"unmatched", r.unmatched},
          {"accounted_cpu", r.accounted_cpu}, {"connection_cpu", r.connection_cpu}, {"connections", r.connections},
          {"charged_vs_server_cpu", r.accounted_vs_server},
          {"measured_cpu", r.measured_cpu}, {"measured_cpu_within_10pct", r.measured_cpu_within_10pct},
          {"clusters", clusters}, {"avg_diameter", r.avg_diameter}, {"min_separation", r.min_separation},
          {"model_error_cpu", r.model_error_cpu}, {"model_error_disk", r.model_error_disk},
          {"model_error_net", r.model_error_net}, {"model_error", r.model_error}, {"purity", r.purity},
          {"ari", r.ari}, {"outside_type_cluster", r.outside_type_cluster}, {"bef_separate", r.bef_separate},
          {"anomalies", r.anomalies}, {"join_summary", r.summary}};
}

std::string Today() {
  time_t now = time(nullptr);
  char date[32];
  strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
  return date;
}

nlohmann::json Machine() {
  utsname u{};
  uname(&u);
  return {{"host", u.nodename}, {"kernel", u.release}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}};
}

// --real: Debian's servers, recorded with `jackdaw record --pid`.
int RunReal(const ReproduceArgs& a) {
  const std::string self = SelfPath();
  auto all = validate::RealWorkloads(a.requests_given ? a.requests : 300);
  if (!a.only.empty()) {
    auto sel = validate::SelectRealWorkloads(all, a.only);
    if (!sel.ok()) return PrintError(sel.status().message()), 2;
    all = std::move(*sel);
  }
  Status priv = capture::CheckPrivileges();
  if (!priv.ok()) return PrintError(priv.message()), 2;
  for (const auto& w : all) {
    const std::string bin = validate::ServerBinary(w.server);
    if (access(bin.c_str(), X_OK) != 0)
      return PrintError(std::string(validate::ServerName(w.server)) + " is not installed (" + bin +
                        "): run scripts/install-deps.sh as root, or apt-get install " +
                        validate::ServerPackage(w.server)),
             2;
  }
  std::error_code ec;
  Status dir = validate::PrepareRealWorkDir(a.work_dir);
  if (!dir.ok()) return PrintError("--work-dir: " + dir.message()), 1;
  validate::RealRunOptions ro;
  ro.bin_dir = self.substr(0, self.rfind('/'));
  ro.work_dir = a.work_dir;
  ro.verbose = a.verbose;
  const std::vector<std::string> schemas =
      a.schemas_given ? a.schemas : std::vector<std::string>{"tcp-threadpool"};
  const auto dirs = schema::DefaultSchemaDirs(self);
  std::vector<std::pair<validate::RecordedRun, std::vector<validate::SchemaResult>>> rows;
  std::vector<std::pair<std::string, validate::InteractionAgreement>> ia_rows;
  nlohmann::json out = nlohmann::json::array();
  bool ok = true;
  size_t i = 0;
  const size_t total = all.size() * size_t(a.repeat);
  for (const auto& w : all) {
    for (int rep = 0; rep < a.repeat; ++rep) {
      fprintf(stderr, "[%zu/%zu] %s, %d clients, %d requests%s: recording...", ++i, total, w.name.c_str(),
              w.clients, w.requests, a.repeat > 1 ? (", run " + std::to_string(rep + 1)).c_str() : "");
      fflush(stderr);
      auto run = a.reanalyze ? validate::KeptRealRun(ro, w, rep) : validate::RecordRealWorkload(ro, w, rep);
      if (!run.ok()) {
        fprintf(stderr, "\n");
        PrintError(run.status().message());
        ok = false;
        continue;
      }
      fprintf(stderr, " %.1f s; analysing...", run->wall_s);
      nlohmann::json jw = {{"workload", w.name}, {"server", validate::ServerName(w.server)},
                           {"keep_alive", w.keep_alive}, {"clients", w.clients}, {"requests", w.requests},
                           {"repeat", rep}, {"record_wall_s", run->wall_s}};
      std::vector<validate::SchemaResult> results;
      // A server with a schema of its own (postgres: its set-up exchange
      // declared) is analysed with it too, after the generic one.
      std::vector<std::string> run_schemas = schemas;
      if (!a.schemas_given && w.server == validate::ServerKind::kPostgres) run_schemas.push_back("postgres");
      for (const auto& s : run_schemas) {
        auto r = validate::AnalyzeRun(*run, s, dirs);
        if (!r.ok()) {
          fprintf(stderr, "\n");
          PrintError(s + ": " + r.status().message());
          ok = false;
          continue;
        }
        jw["schemas"].push_back(ToJson(*r));
        results.push_back(std::move(*r));
      }
      // The kernel's interactions against the clients and the join. Traces
      // kept before interactions were recorded beside them have none.
      if (!a.reanalyze || std::filesystem::exists(validate::InteractionsPathFor(run->trace))) {
        auto agreement = validate::CompareRunInteractions(*run, schemas.front(), dirs);
        if (agreement.ok()) {
          jw["interactions"] = validate::AgreementJson(*agreement);
          ia_rows.push_back({w.name, *agreement});
        } else {
          fprintf(stderr, "\n");
          PrintError("interactions: " + agreement.status().message());
          ok = false;
        }
      }
      fprintf(stderr, " done\n");
      out.push_back(jw);
      rows.push_back({*run, std::move(results)});
      if (a.keep_traces || a.reanalyze) {
        if (!a.reanalyze)
          fprintf(stderr, "jackdaw: kept %s, %s and %s\n", run->trace.c_str(),
                  validate::InteractionsPathFor(run->trace).c_str(), run->truth.c_str());
      } else {
        std::filesystem::remove(run->trace, ec);
        std::filesystem::remove(run->truth, ec);
        std::filesystem::remove(validate::InteractionsPathFor(run->trace), ec);
        std::filesystem::remove(validate::InteractionsLogFor(run->trace), ec);
      }
    }
  }
  validate::PrintRealTable(rows, stdout);
  validate::PrintInteractionTable(ia_rows, stdout);
  if (a.repeat > 1) {
    // Stability: the same workload recorded again should give the same
    // number of clusters (within one).
    printf("\nclusters per repeated run (same workload, recorded again):\n");
    std::map<std::string, std::string> per;
    for (const auto& [run, results] : rows)
      for (const auto& r : results)
        per[run.workload.name + " " + r.schema] += std::to_string(r.clusters.size()) + " ";
    for (const auto& [k, v] : per) printf("  %-34s %s\n", k.c_str(), v.c_str());
  }
  if (!a.results.empty()) {
    nlohmann::json doc = {{"date", Today()}, {"machine", Machine()}, {"real", true}, {"repeat", a.repeat},
                          {"only", a.only}, {"runs", out}};
    Status written = WriteOwnedFile(a.results, doc.dump(2) + "\n", kOutputFileMode);
    if (!written.ok()) return PrintError("--results: " + written.message()), 1;
    fprintf(stderr, "jackdaw: results written to %s\n", OutputName(a.results).c_str());
  }
  return ok ? 0 : 1;
}

int Run(const ReproduceArgs& a) {
  if (!a.results.empty()) {
    Status out = CheckOutput(a.results);
    if (!out.ok()) return PrintError("--results: " + out.message()), 1;
  }
  if (a.real) {
    if (a.quick) return PrintError("--quick and --real cannot be combined (shorten --real with -n)"), 2;
    if (a.reanalyze && a.keep_traces) return PrintError("--reanalyze keeps the traces it reads; drop --keep-traces"), 2;
    return RunReal(a);
  }
  if (a.repeat != 1) return PrintError("--repeat applies to --real only"), 2;
  if (a.reanalyze) return PrintError("--reanalyze applies to --real only"), 2;
  const std::string self = SelfPath();
  validate::RunOptions ro;
  ro.bin_dir = self.substr(0, self.rfind('/'));
  ro.work_dir = a.work_dir;
  ro.verbose = a.verbose;
  auto all = validate::PaperWorkloads(a.quick, a.requests);
  if (!a.only.empty()) {
    if (a.quick) return PrintError("--quick and --only cannot be combined"), 2;
    auto sel = validate::SelectWorkloads(all, a.only);
    if (!sel.ok()) return PrintError(sel.status().message()), 2;
    all = std::move(*sel);
  }
  const auto& workloads = all;
  Status priv = capture::CheckPrivileges();
  if (!priv.ok()) return PrintError(priv.message()), 2;
  std::error_code ec;
  // Traces are written here as root under predictable names: a directory
  // another user can write (or planted in advance at the default path) is
  // refused, since a link in it would redirect those writes.
  const std::filesystem::path parent = std::filesystem::path(a.work_dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  Status dir = CheckPrivateDir(a.work_dir);
  if (!dir.ok()) return PrintError("--work-dir: " + dir.message()), 1;
  const auto dirs = schema::DefaultSchemaDirs(self);
  std::vector<std::pair<validate::Workload, std::vector<validate::SchemaResult>>> rows;
  nlohmann::json out = nlohmann::json::array();
  bool ok = true;
  size_t i = 0;
  for (const auto& w : workloads) {
    ++i;
    fprintf(stderr, "[%zu/%zu] table %s: %s, %d client%s, %d requests: recording...", i, workloads.size(),
            w.table.c_str(), w.name.c_str(), w.clients, w.clients > 1 ? "s" : "", w.requests);
    fflush(stderr);
    auto run = validate::RecordWorkload(ro, w);
    if (!run.ok()) {
      fprintf(stderr, "\n");
      PrintError(run.status().message());
      ok = false;
      continue;
    }
    fprintf(stderr, " %.1f s; analysing...", run->wall_s);
    std::vector<validate::SchemaResult> results;
    nlohmann::json jw = {{"table", w.table}, {"workload", w.name}, {"clients", w.clients},
                         {"requests", w.requests}, {"record_wall_s", run->wall_s}};
    for (const auto& s : a.schemas) {
      auto r = validate::AnalyzeRun(*run, s, dirs);
      if (!r.ok()) {
        fprintf(stderr, "\n");
        PrintError(s + ": " + r.status().message());
        ok = false;
        continue;
      }
      jw["schemas"].push_back(ToJson(*r));
      results.push_back(std::move(*r));
    }
    fprintf(stderr, " done\n");
    out.push_back(jw);
    rows.push_back({w, std::move(results)});
    if (a.keep_traces) {
      fprintf(stderr, "jackdaw: kept %s and %s\n", run->trace.c_str(), run->truth.c_str());
    } else {
      std::filesystem::remove(run->trace, ec);
      std::filesystem::remove(run->truth, ec);
    }
  }
  validate::PrintTables(rows, stdout);
  if (!a.results.empty()) {
    utsname u{};
    uname(&u);
    time_t now = time(nullptr);
    char date[32];
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    nlohmann::json doc = {{"date", date},
                          {"machine", {{"host", u.nodename}, {"kernel", u.release}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}}},
                          {"quick", a.quick},
                          {"only", a.only},
                          {"runs", out}};
    Status written = WriteOwnedFile(a.results, doc.dump(2) + "\n", kOutputFileMode);
    if (!written.ok()) return PrintError("--results: " + written.message()), 1;
    fprintf(stderr, "jackdaw: results written to %s\n", OutputName(a.results).c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

Runner RegisterReproduce(CLI::App& app) {
  auto args = std::make_shared<ReproduceArgs>();
  CLI::App* sub = app.add_subcommand(
      "reproduce",
      "Reproduce Magpie's validation (OSDI'04 Tables 2-5) on this machine: record the built-in test\n"
      "server under each paper workload (A, B, A/B, C, D, C/D, E, B/E, A/B/E, F, A/F, A/E/F,\n"
      "A/B/E/F; 1 and 5 clients), analyse with both schemas and compare with ground truth.\n"
      "  sudo jackdaw reproduce --quick                      # mixed A/B/E/F only, about a minute\n"
      "  sudo jackdaw reproduce --only E,A/E/F:5 --keep-traces --work-dir /var/tmp/jdw\n"
      "  sudo jackdaw reproduce --results tests/results/magpie.json\n"
      "  sudo jackdaw reproduce --real --repeat 5 --results tests/results/real.json   Debian's servers");
  sub->add_flag("--quick", args->quick, "only the mixed A/B/E/F workload with 5 clients");
  CLI::Option* n = sub->add_option("-n,--requests", args->requests, "requests per workload (--real: 300)")
                       ->type_name("N")
                       ->capture_default_str()
                       ->check(IntRange(1, 1'000'000'000));
  sub->add_option("--work-dir", args->work_dir, "where traces and ground truth go (disk-backed)")
      ->type_name("DIR")
      ->capture_default_str();
  Output(sub->add_option("--results", args->results, "also write all figures as JSON to this file")->type_name("FILE"));
  CLI::Option* schemas = sub->add_option("--schemas", args->schemas, "schemas to compare (--real: tcp-threadpool, and postgres for the PostgreSQL workload)")
                             ->type_name("SCHEMA")
                             ->delimiter(',')
                             ->capture_default_str();
  std::string real_names;
  for (const auto& w : validate::RealWorkloads(1)) real_names += (real_names.empty() ? "" : ", ") + w.name;
  const std::string real_help =
      "the real-server suite instead: Debian's nginx (connection per request, keep-alive; plain,\n"
      "TLS 1.3 and TLS 1.2; and as a reverse proxy with pooled upstream connections in front of\n"
      "jackdaw-testserver, both recorded), memcached (persistent connections, 4 worker threads),\n"
      "apache2 with mpm_prefork (connection per request, keep-alive), PostgreSQL (a backend\n"
      "process per connection; a throwaway cluster, removed afterwards), redis (one event-loop\n"
      "thread, persistent connections), lighttpd (one event-loop process; connection per\n"
      "request, keep-alive), MariaDB (a thread per connection; a throwaway data directory) and\n"
      "unbound (DNS over UDP), each on loopback with a private configuration in --work-dir,\n"
      "driven by jackdaw's own clients (files of 5 KB, 12 KB, 256 KB and a 404; Table 1's\n"
      "spins through the proxy; gets of 100 B and 100 KB values, sets of 50 KB; a point SELECT,\n"
      "a ~100 KB SELECT, a 1-row INSERT and a 500-row INSERT; A, AAAA, TXT and NXDOMAIN\n"
      "queries), recorded with record --pid.\n"
      "--only takes: " + real_names;
  sub->add_flag("--real", args->real, real_help);
  sub->add_option("--repeat", args->repeat, "--real: record each workload this many times (clustering stability)")
      ->type_name("N")
      ->check(IntRange(1, 100));
  sub->add_option("--only", args->only,
                  "run only these workloads, comma-separated: a name (A, C/D, A/B/E/F: both client\n"
                  "counts) or NAME:CLIENTS (A/E/F:5); an unknown name is an error")
      ->type_name("WORKLOAD")
      ->delimiter(',');
  sub->add_flag("--keep-traces", args->keep_traces,
                "keep each run's trace (NAME_cN.jdw) and ground truth (NAME_cN.truth.jsonl) in\n"
                "--work-dir, for `jackdaw analyze` (otherwise both are deleted after analysis)");
  sub->add_flag("--reanalyze", args->reanalyze,
                "--real: analyse the traces an earlier --real --keep-traces run left in --work-dir\n"
                "again (same --only and --repeat) instead of recording: compare schemas or join changes\n"
                "on identical recordings");
  sub->add_flag("-v,--verbose", args->verbose, "show the server's and recorder's output");
  return [args, n, schemas] {
    args->requests_given = n->count() > 0;
    args->schemas_given = schemas->count() > 0;
    return Run(*args);
  };
}

}  // namespace jackdaw::cli
