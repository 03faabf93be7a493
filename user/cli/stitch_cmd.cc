// jackdaw stitch: end-to-end requests across machines (Magpie §4.1).
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/safe_file.h"
#include "join/extractor.h"
#include "model/workload_model.h"
#include "pcap/packets.h"
#include "report/report.h"
#include "schema/schema.h"
#include "stitch/stitcher.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

struct StitchArgs {
  std::vector<std::string> files;
  std::vector<std::string> schemas;
  std::vector<std::string> shifts;  // "INDEX=NS"
  std::string json_out;
  double threshold = 0;
  double window_s = 1.0;
  bool no_model = false;
};

std::string Base(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Us(int64_t ns) {
  char buf[48];
  snprintf(buf, sizeof(buf), "%+.1f us", double(ns) / 1e3);
  return buf;
}

// Moves every time of one machine's fragments by `ns`: what a clock that far
// off would have recorded.
void ShiftClock(stitch::TraceFragments& t, int64_t ns) {
  const uint64_t d = static_cast<uint64_t>(ns);
  for (model::Request& r : t.requests) {
    r.start_ns += d;
    r.end_ns += d;
    for (model::RequestEvent& e : r.events) e.ts_ns += d;
  }
  for (auto& segs : t.segments)
    for (stitch::Segment& s : segs) s.mono_ns += d;
}

int Run(const StitchArgs& a, const std::string& argv0) {
  const size_t n = a.files.size();
  if (n < 2) {
    PrintError("stitch: give one trace per machine, at least two (jackdaw stitch web.jdw db.jdw --schema S)");
    return 1;
  }
  if (a.schemas.size() != 1 && a.schemas.size() != n) {
    PrintError("stitch: give one --schema for every trace, or one for all (got " + std::to_string(a.schemas.size()) +
               " for " + std::to_string(n) + " traces)");
    return 1;
  }
  if (!a.json_out.empty()) {
    Status out = CheckOutput(a.json_out);
    if (!out.ok()) return PrintError("--json: " + out.message()), 1;
  }
  std::map<size_t, int64_t> shifts;
  for (const std::string& s : a.shifts) {
    size_t eq = s.find('=');
    char* end = nullptr;
    const unsigned long idx = eq == std::string::npos ? 0 : strtoul(s.c_str(), &end, 10);
    long long ns = 0;
    bool ok = eq != std::string::npos && end == s.c_str() + eq && idx < n;
    if (ok) {
      ns = strtoll(s.c_str() + eq + 1, &end, 10);
      ok = *end == 0 && eq + 1 < s.size();
    }
    if (!ok) {
      PrintError("stitch: --clock-shift wants TRACE_INDEX=NANOSECONDS with an index below " + std::to_string(n) +
                 " (e.g. 1=250000), got '" + s + "'");
      return 1;
    }
    shifts[idx] = ns;
  }

  std::vector<stitch::TraceFragments> traces(n);
  std::vector<std::unique_ptr<trace::TraceReader>> readers(n);
  const auto dirs = schema::DefaultSchemaDirs(argv0);
  for (size_t i = 0; i < n; ++i) {
    auto reader = trace::TraceReader::Open(a.files[i]);
    if (!reader.ok()) return PrintError(reader.status().message()), 1;
    auto schema = schema::LoadSchema(a.schemas.size() == 1 ? a.schemas[0] : a.schemas[i], dirs);
    if (!schema.ok()) return PrintError(schema.status().message()), 1;
    join::Options jo;
    jo.reorder_window = static_cast<uint64_t>(a.window_s * 1e9);
    auto ex = join::ExtractRequests(**reader, *schema, jo);
    if (!ex.ok()) return PrintError(ex.status().message()), 1;
    const std::vector<pcap::Packet> packets = pcap::ReadPackets(**reader);
    stitch::AttributionStats st;
    traces[i].name = Base(a.files[i]);
    traces[i].segments = stitch::AttributeSegments(ex->requests, packets, &st);
    traces[i].requests = std::move(ex->requests);
    if (packets.empty()) {
      PrintError(a.files[i] + " holds no packet records: record every machine with the net probes "
                 "(the default probe set has them) to stitch");
      return 1;
    }
    if (auto it = shifts.find(i); it != shifts.end()) ShiftClock(traces[i], it->second);
    printf("#%zu %s (host %s): %zu requests, %" PRIu64 " data segments in them (%" PRIu64
           " seen at the far end, %" PRIu64 " without a record)%s\n",
           i, traces[i].name.c_str(), (*reader)->meta().host.c_str(), traces[i].requests.size(), st.data_segments,
           st.other_end, st.unmatched_events,
           shifts.count(i) ? (" [clock shifted " + Us(shifts[i]) + "]").c_str() : "");
    readers[i] = std::move(*reader);
  }

  auto res = stitch::Stitch(traces);
  if (!res.ok()) return PrintError(res.status().message()), 1;
  if (res->requests.empty()) {
    PrintError("unstitchable: no TCP data sent in one trace was received in another (" +
               std::to_string(res->matched_segments) +
               " matched segments): these traces share no connection; record the machines while they talk "
               "to each other");
    return 1;
  }
  for (uint32_t t : res->unstitchable)
    fprintf(stderr, "jackdaw: warning: %s is unstitchable: it shares no connection with the other traces; left out\n",
            traces[t].name.c_str());

  printf("\nclock offsets against #0 %s (matched TCP segments, no synchronised clocks needed):\n",
         traces[0].name.c_str());
  for (size_t i = 1; i < n; ++i) {
    const stitch::ClockOffset& o = res->offsets[i];
    if (!o.known) printf("  #%zu %s: unknown (no link)\n", i, traces[i].name.c_str());
    else if (o.estimated)
      printf("  #%zu %s: %s, uncertain by %.1f us (from %" PRIu64 " matched segments)\n", i, traces[i].name.c_str(),
             Us(o.offset_ns).c_str(), double(o.uncertainty_ns) / 1e3, o.matched_segments);
    else printf("  #%zu %s: bound %s (%s)\n", i, traces[i].name.c_str(), Us(o.offset_ns).c_str(), o.one_way.c_str());
  }
  std::map<size_t, size_t> by_callees;
  for (const stitch::EndToEnd& e : res->requests) by_callees[e.fragments.size() - 1]++;
  printf("\nend-to-end requests: %zu (%" PRIu64 " matched segments); fragments left alone:", res->requests.size(),
         res->matched_segments);
  for (size_t i = 0; i < n; ++i) printf(" #%zu %" PRIu64, i, res->lone_fragments[i]);
  printf("\n  fragments called per end-to-end request:");
  for (auto [k, c] : by_callees) printf(" %zu: %zu", k, c);
  printf("\n");
  if (res->roles_by_time)
    printf("  %" PRIu64 " matched segments between fragments of which one lacks its connection's first data "
           "segment: caller and callee set by the clock\n",
           res->roles_by_time);

  // Table 6: each tier's fragments clustered on their own, then end to end.
  std::vector<model::Request> e2e;
  for (const stitch::EndToEnd& e : res->requests) e2e.push_back(e.request);
  nlohmann::json j;
  std::vector<model::WorkloadModel> models;
  if (!a.no_model) {
    printf("\n%-24s %9s %9s %13s %12s\n", "tier", "requests", "clusters", "avg diameter", "model error");
    for (size_t i = 0; i <= n; ++i) {
      const std::vector<model::Request>& reqs = i < n ? traces[i].requests : e2e;
      model::ModelOptions mo;
      mo.cluster.threshold = a.threshold;
      auto m = model::BuildModel(reqs, mo);
      if (!m.ok()) return PrintError(m.status().message()), 1;
      const std::string name = i < n ? "#" + std::to_string(i) + " " + traces[i].name : "E2E";
      printf("%-24s %9zu %9zu %13.3f %11.1f%%\n", name.c_str(), reqs.size(), m->clusters.size(), m->avg_diameter,
             100 * m->error.combined);
      j["tiers"].push_back({{"name", name}, {"requests", reqs.size()}, {"clusters", m->clusters.size()}});
      models.push_back(std::move(*m));
    }
    printf("\nend-to-end workload model:\n");
    report::WriteTextReport(models.back(), std::cout);
  }

  if (!a.json_out.empty()) {
    for (size_t i = 0; i < n; ++i) {
      const stitch::ClockOffset& o = res->offsets[i];
      j["traces"].push_back({{"file", a.files[i]},
                             {"requests", traces[i].requests.size()},
                             {"lone_fragments", res->lone_fragments[i]},
                             {"offset", {{"known", o.known},
                                         {"estimated", o.estimated},
                                         {"offset_ns", o.offset_ns},
                                         {"uncertainty_ns", o.uncertainty_ns},
                                         {"matched_segments", o.matched_segments}}}});
    }
    j["unstitchable"] = res->unstitchable;
    j["matched_segments"] = res->matched_segments;
    j["roles_by_time"] = res->roles_by_time;
    auto& jr = j["requests"] = nlohmann::json::array();
    for (size_t k = 0; k < res->requests.size(); ++k) {
      const stitch::EndToEnd& e = res->requests[k];
      nlohmann::json r = {{"id", e.request.id},
                          {"start_ns", e.request.start_ns},
                          {"latency_ns", e.request.latency_ns()},
                          {"events", e.request.events.size()}};
      if (!models.empty()) r["cluster"] = models.back().requests[k].cluster;
      for (const stitch::FragmentRef& f : e.fragments)
        r["fragments"].push_back({{"trace", f.trace},
                                  {"request_id", traces[f.trace].requests[f.request].id},
                                  {"caller", f.caller}});
      jr.push_back(std::move(r));
    }
    Status written = WriteOutput(a.json_out, j.dump() + "\n");
    if (!written.ok()) return PrintError(written.message()), 1;
    fprintf(stderr, "jackdaw: stitching written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterStitch(CLI::App& app) {
  auto args = std::make_shared<StitchArgs>();
  CLI::App* sub = app.add_subcommand(
      "stitch",
      "Join request fragments recorded on several machines into end-to-end requests (Magpie §4.1).\n"
      "Record each machine with its own jackdaw (net probes on), then:\n"
      "  jackdaw stitch web.jdw db.jdw --schema testserver\n"
      "  jackdaw stitch web.jdw db.jdw --schema web.schema --schema db.schema --json e2e.json\n"
      "Each trace is parsed on its own clock. A TCP segment one machine sent and another received\n"
      "(same 5-tuple, overlapping sequence numbers) links the two fragments; clocks need not be\n"
      "synchronised: their offsets are estimated from those segments and reported. Prints each\n"
      "tier's and the end-to-end clusters (Table 6 of the paper). Traces that share no connection\n"
      "are reported as unstitchable, never merged by time.");
  sub->add_option("files", args->files, "trace files (.jdw), one per machine; the first is the reference clock")
      ->type_name("FILE")
      ->required();
  sub->add_option("-s,--schema", args->schemas, "schema for every trace, or one per trace in order")
      ->type_name("SCHEMA")
      ->required();
  Output(sub->add_option("--json", args->json_out,
                         "write offsets and end-to-end requests (with their fragments) as JSON")
             ->type_name("FILE"));
  sub->add_option("--clock-shift", args->shifts,
                  "move trace number TRACE_INDEX's clock by NS nanoseconds before stitching (to check the "
                  "offset estimate against a known shift)")
      ->type_name("TRACE_INDEX=NS");
  sub->add_option("--threshold", args->threshold, "clustering distance threshold (default: derived from the data)")
      ->type_name("DISTANCE");
  AddReorderWindow(sub, &args->window_s);
  sub->add_flag("--no-model", args->no_model, "stitch and report offsets only; no clustering");
  auto argv0 = std::make_shared<std::string>();
  sub->preparse_callback([argv0](size_t) {
    char buf[4096];
    ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    *argv0 = len > 0 ? std::string(buf, len) : "jackdaw";
  });
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
