// jackdaw fleet: one workload model for many hosts, read from the ClickHouse
// store analyze and live write to (user/fleet/, docs/clickhouse.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/clickhouse_args.h"
#include "cli/commands.h"
#include "common/safe_file.h"
#include "fleet/deviation.h"
#include "fleet/fleet_report.h"
#include "fleet/merge.h"
#include "fleet/store_query.h"
#include "report/report.h"

namespace jackdaw::cli {
namespace {

struct FleetArgs {
  std::string url, json_out;
  double since_s = 0;
  uint64_t from_ns = 0;
  std::vector<std::string> hosts;
  double deviation = 0.5;
  double max_distance = 0.5;
  double timeout_s = 60;
};

int Run(const FleetArgs& a) {
  if (!a.json_out.empty())
    if (Status st = CheckOutput(a.json_out); !st.ok()) return PrintError("--json: " + st.message()), 1;
  fleet::StoreQuery q;
  q.url = a.url;
  q.hosts = a.hosts;
  q.timeout_ms = static_cast<int>(a.timeout_s * 1000);
  q.from_ns = a.from_ns;
  if (a.since_s > 0) {
    const uint64_t now = WallNowNs(), back = static_cast<uint64_t>(a.since_s * 1e9);
    q.from_ns = now > back ? now - back : 1;
  }
  auto rows = fleet::ReadFleet(q);
  if (!rows.ok()) return PrintError(rows.status().message()), 1;
  if (rows->empty()) {
    PrintError("--clickhouse " + a.url + ": the store holds no clustered requests" +
               (q.from_ns ? " from " + std::to_string(q.from_ns) + " ns on" : std::string()) +
               (a.hosts.empty() ? std::string() : " of the --host names given") +
               ": store some with jackdaw analyze TRACE --schema S --clickhouse " + a.url +
               " (or jackdaw live ... --clickhouse), or widen --since/--from");
    return 1;
  }
  fleet::MergeOptions mo;
  mo.max_distance = a.max_distance;
  fleet::DeviationOptions dop;
  dop.threshold = a.deviation;
  fleet::FleetReport r;
  r.store = a.url;
  r.from_ns = q.from_ns;
  r.max_distance = a.max_distance;
  r.deviation_threshold = a.deviation;
  r.window_s = fleet::WindowSeconds(*rows, q.from_ns);
  r.rows = std::move(*rows);
  r.kinds = fleet::MergeKinds(r.rows, mo);
  r.deviations = fleet::FindDeviations(r.kinds, r.rows, dop);
  fleet::WriteFleetText(r, std::cout);
  if (!a.json_out.empty()) {
    Status written = report::WriteJsonFile(fleet::FleetToJson(r), a.json_out);
    if (!written.ok()) return PrintError(written.message()), 1;
    fprintf(stderr, "jackdaw: fleet (JSON) written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterFleet(CLI::App& app) {
  auto args = std::make_shared<FleetArgs>();
  CLI::App* sub = app.add_subcommand(
      "fleet",
      "One workload model for many hosts, from the ClickHouse store analyze and live write to\n"
      "(--clickhouse): the hosts' clusters merged into fleet kinds by Magpie's distance, each kind's\n"
      "hosts with their counts, rates, latency and CPU, and the host that deviates from the others.\n"
      "  jackdaw fleet --clickhouse http://127.0.0.1:8123\n"
      "  jackdaw fleet --clickhouse http://store:8123 --since 3600 --host web-1 --host web-2 --json fleet.json\n"
      "  jackdaw fleet --clickhouse http://127.0.0.1:8123 --deviation 0.3 --json -");
  sub->add_option("--clickhouse", args->url,
                  "the store's HTTP interface, e.g. http://127.0.0.1:8123 (database jackdaw; user and password\n"
                  "as URL parameters)")
      ->option_text("URL")
      ->required();
  auto since = sub->add_option("--since", args->since_s, "only requests that started in the last SECONDS")
                   ->option_text("SECONDS")
                   ->check(FiniteRange(0, kMaxDurationS, true, " seconds"));
  sub->add_option("--from", args->from_ns, "only requests that started at or after this wall-clock time (ns since "
                                           "the epoch)")
      ->option_text("NS")
      ->excludes(since);
  sub->add_option("--host", args->hosts, "only these hosts (repeat the option; default: every host)")
      ->option_text("H")
      ->allow_extra_args(false);
  Output(sub->add_option("--json", args->json_out, "write the fleet model as JSON")->option_text("FILE"));
  sub->add_option("--deviation", args->deviation,
                  "name a host whose median latency or CPU per request on a kind differs from the median of\n"
                  "the other hosts by more than this fraction (0.5: 50 %)")
      ->type_name("FRACTION")
      ->capture_default_str()
      ->check(FiniteRange(0, 1000, true, ""));
  sub->add_option("--max-distance", args->max_distance,
                  "largest Magpie distance between two hosts' cluster representatives of one fleet kind")
      ->type_name("DISTANCE")
      ->capture_default_str()
      ->check(FiniteRange(0, 1000, false, ""));
  sub->add_option("--timeout", args->timeout_s, "seconds each query to the store may take")
      ->type_name("SECONDS")
      ->capture_default_str()
      ->check(FiniteRange(0, 3600, true, " seconds"));
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
