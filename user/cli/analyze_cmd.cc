// jackdaw analyze: requests (temporal join) and the workload model.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <unistd.h>
#include <memory>
#include <optional>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/clickhouse_args.h"
#include "cli/commands.h"
#include "common/loss_share.h"
#include "cluster/interaction_clusters.h"
#include "common/safe_file.h"
#include "export/http/http_post.h"
#include "cli/otlp_args.h"
#include "export/otlp/otlp_exporter.h"
#include "export/otlp/span_ids.h"
#include "join/extractor.h"
#include "model/likelihood/request_likelihood.h"
#include "model/streaming_model.h"
#include "pcap/pcap_input.h"
#include "pcap/record_merge.h"
#include "report/progress_bar.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"
#include "cli/self_path.h"

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
  OtlpArgs otlp;
  ClickHouseArgs clickhouse;
  std::vector<std::string> pcaps;
  double pcap_offset_s = 0;
  double threshold = 0;
  double window_s = 1.0;
  bool no_refine = false;
  uint32_t warmup = 4096;
  uint32_t sample = 16;
  uint32_t unlikely = 10;
  double alpha = 0.05;
  bool salvage = false;
  bool quiet = false;
};

// A trace of in-kernel interaction summaries only (jackdaw interactions -o):
// no events to join, so the interactions themselves are clustered.
int RunInteractions(const AnalyzeArgs& a, const trace::TraceMeta& meta,
                    const std::vector<cluster::InteractionPoint>& points) {
  // Into ClickHouse first: a store that is not there ends the command
  // before anything is printed, as for an event trace.
  if (!a.clickhouse.url.empty()) {
    auto store = OpenClickHouse(a.clickhouse, meta.host, "", /*offline=*/true);
    if (!store.ok()) return PrintError(store.status().message()), 1;
    if (Status made = (*store)->CreateTables(); !made.ok()) return PrintError(made.message()), 1;
    for (const cluster::InteractionPoint& p : points) (*store)->AddInteraction(InteractionOf(p.tgid, p.ia, meta.time));
    const http::SenderStats s = (*store)->Finish();
    fprintf(stderr, "jackdaw: ClickHouse %s: %llu of %zu interactions stored in jackdaw.interactions%s%s\n",
            a.clickhouse.url.c_str(), static_cast<unsigned long long>(s.items_sent), points.size(),
            s.last_error.empty() ? "" : "; last error: ", s.last_error.c_str());
    if (s.items_sent != points.size())
      return PrintError("ClickHouse " + a.clickhouse.url + " did not store every interaction: check it and run again"),
             1;
  }
  cluster::InteractionClusterOptions o;
  if (a.threshold > 0) o.threshold = a.threshold;
  auto cs = cluster::ClusterInteractions(points, o);
  printf("%zu interactions (in-kernel summaries, no event trace), %zu clusters\n", points.size(), cs.size());
  printf("%-4s %6s %-6s %6s %8s %9s %9s %8s %8s %8s %8s %8s %6s\n", "ID", "SIZE", "ROLE", "PORT", "PID",
         "REQ B", "RESP B", "P50 MS", "P99 MS", "KERN MS", "APP MS", "SEND MS", "DIA");
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < cs.size(); ++i) {
    const auto& c = cs[i];
    printf("%-4zu %6zu %-6s %6u %8u %9.0f %9.0f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2f%s\n", i, c.size,
           c.role == JDW_ROLE_SERVER ? "server" : "client", c.port, c.tgid, c.mean_req_bytes, c.mean_resp_bytes,
           c.p50_ms, c.p99_ms, c.mean_kernel_ms, c.mean_app_ms, c.mean_send_ms, c.diameter,
           c.size == 1 && cs.size() > 1 ? "  anomaly" : "");
    arr.push_back({{"id", i}, {"size", c.size}, {"role", c.role == JDW_ROLE_SERVER ? "server" : "client"},
                   {"port", c.port}, {"pid", c.tgid}, {"mean_req_bytes", c.mean_req_bytes},
                   {"mean_resp_bytes", c.mean_resp_bytes}, {"p50_ms", c.p50_ms}, {"p99_ms", c.p99_ms},
                   {"mean_kernel_ms", c.mean_kernel_ms}, {"mean_app_ms", c.mean_app_ms},
                   {"mean_send_ms", c.mean_send_ms}, {"mean_oncpu_ms", c.mean_oncpu_ms},
                   {"diameter", c.diameter}});
  }
  if (!a.json_out.empty()) {
    Status written = WriteOutput(a.json_out, nlohmann::json({{"interaction_clusters", arr}}).dump(2) + "\n");
    if (!written.ok()) return PrintError(written.message()), 1;
    fprintf(stderr, "jackdaw: interaction clusters (JSON) written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

// Every output path is checked before the analysis runs: a path that
// cannot be written fails at once, not after minutes of work.
Status CheckOutputs(const AnalyzeArgs& a) {
  const std::pair<const char*, const std::string*> files[] = {
      {"--requests", &a.requests_out}, {"--json", &a.json_out}, {"--perfetto", &a.perfetto_out},
      {"--html", &a.html_out}};
  for (const auto& [option, path] : files) {
    if (path->empty()) continue;
    Status st = CheckOutput(*path);
    if (!st.ok()) return ErrStatus("%s: %s", option, st.message().c_str());
  }
  if (!a.csv_dir.empty()) {
    if (IsStdout(a.csv_dir))
      return ErrStatus("--csv -: the tables are a file each and need a directory, not standard output; give "
                       "--csv DIR (or --json - for every table in one stream)");
    Status st = CheckPrivateDir(a.csv_dir, 0755);
    if (!st.ok()) return ErrStatus("--csv: %s", st.message().c_str());
  }
  RETURN_IF_ERROR(CheckOtlpArgs(a.otlp));
  return CheckClickHouseUrl(a.clickhouse);
}

// An unnamed file in $TMPDIR (else /tmp), removed when closed: where the
// --requests lines wait for their scores. (tmpfile() ignores TMPDIR.)
StatusOr<FILE*> OpenSpool() {
  const char* env = getenv("TMPDIR");
  const std::string dir = env && *env ? env : "/tmp";
  std::string path = dir + "/jackdaw-requests-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0)
    return ErrStatus("--requests: cannot create a spool file in %s: %s; set TMPDIR to a writable directory with "
                     "room for the requests",
                     dir.c_str(), strerror(errno));
  unlink(path.c_str());
  FILE* f = fdopen(fd, "w+");
  if (!f) {
    close(fd);
    return ErrStatus("--requests: cannot open the spool file: %s", strerror(errno));
  }
  return f;
}

// Copies the spooled --requests lines to `path`, each request line ending
// with the log_likelihood of the tree state its spool prefix names; an
// incomplete request (and a connection's line) has none.
Status WriteScoredRequests(FILE* spool, const model::likelihood::RequestLikelihood& likelihood,
                           const std::string& path) {
  auto opened = OpenOwnedStream(path, kOutputFileMode);
  if (!opened.ok()) return ErrStatus("--requests: %s", opened.status().message().c_str());
  std::unique_ptr<FILE, int (*)(FILE*)> out(*opened, fclose);
  setvbuf(out.get(), nullptr, _IOFBF, 1 << 20);
  rewind(spool);
  char* buf = nullptr;
  size_t cap = 0;
  ssize_t len;
  bool failed = false;
  std::string line;
  while ((len = getline(&buf, &cap, spool)) > 0) {
    const char* space = static_cast<const char*>(memchr(buf, ' ', static_cast<size_t>(len)));
    if (!space) continue;  // cannot happen: every spooled line has its prefix
    line.assign(space + 1, static_cast<size_t>(buf + len - (space + 1)));
    if (buf[0] != '-') {
      const uint32_t state = static_cast<uint32_t>(strtoul(buf, nullptr, 10));
      if (std::optional<double> score = likelihood.ScoreOfState(state)) join::AppendLogLikelihood(&line, *score);
    }
    if (fwrite(line.data(), 1, line.size(), out.get()) != line.size()) failed = true;
  }
  free(buf);
  if (ferror(spool)) return ErrStatus("reading back the --requests spool failed: %s", strerror(errno));
  if (fflush(out.get()) != 0 || failed)
    return ErrStatus("writing %s failed: %s (disk full?)", path.c_str(), strerror(errno));
  return Status::Ok();
}

int Run(const AnalyzeArgs& a, const std::string& argv0) {
  if (Status outputs = CheckOutputs(a); !outputs.ok()) return PrintError(outputs.message()), 1;
  auto reader = trace::TraceReader::OpenForCli(a.file, a.salvage);
  if (!reader.ok()) {
    PrintError(reader.status().message());
    return 1;
  }
  if (!(*reader)->damage().ok()) fprintf(stderr, "jackdaw: warning: %s\n", (*reader)->damage().message().c_str());
  std::vector<cluster::InteractionPoint> interactions;
  bool has_events = false;
  // Stops at the first event record: an event trace is not read twice for
  // this, a trace of interaction summaries is read whole.
  (*reader)->ForEachRecordWhile([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_INTERACTION || h.size < sizeof(jdw_interaction_record)) {
      has_events = true;
      return false;
    }
    cluster::InteractionPoint p;
    p.tgid = h.tgid;
    memcpy(&p.ia, trace::Payload(h), sizeof(p.ia));
    interactions.push_back(p);
    return true;
  });
  if (!has_events && !interactions.empty()) {
    if (a.otlp.any())
      fprintf(stderr, "jackdaw: warning: --otlp/--otlp-json: a trace of interaction summaries has no requests to "
                      "export; record an event trace (jackdaw record) for traces\n");
    return RunInteractions(a, (*reader)->meta(), interactions);
  }
  if (a.schema.empty())
    return PrintError("--schema is required for an event trace (e.g. --schema tcp-threadpool; "
                      "only a trace of interaction summaries analyses without one)"),
           1;
  auto schema = schema::LoadSchema(a.schema, schema::DefaultSchemaDirs(argv0));
  if (!schema.ok()) {
    PrintError(schema.status().message());
    return 1;
  }
  join::Options jo;
  jo.reorder_window = static_cast<uint64_t>(a.window_s * 1e9);
  // Packets captured elsewhere join the trace's record stream at the input,
  // read as the merge needs them: a capture need not fit in memory.
  std::vector<std::unique_ptr<pcap::PcapFileReader>> captures;
  std::vector<pcap::PacketSource> packet_sources;
  for (const std::string& path : a.pcaps) {
    auto file = pcap::PcapFileReader::Open(path, **reader, static_cast<int64_t>(a.pcap_offset_s * 1e9));
    if (!file.ok()) return PrintError(file.status().message()), 1;
    pcap::PcapFileReader* f = file->get();
    packet_sources.push_back([f] { return f->Next(); });
    captures.push_back(std::move(*file));
  }
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
  // Requests into ClickHouse (docs/clickhouse.md): the tables are made
  // before the analysis, so a store that is not there ends it at once; each
  // request's row goes out once the model has given it its cluster.
  std::unique_ptr<clickhouse::ClickHouseSink> store;
  if (!a.clickhouse.url.empty()) {
    auto opened = OpenClickHouse(a.clickhouse, (*reader)->meta().host, schema->name, /*offline=*/true);
    if (!opened.ok()) return PrintError(opened.status().message()), 1;
    store = std::move(*opened);
    if (Status made = store->CreateTables(); !made.ok()) return PrintError(made.message()), 1;
  }
  model::StreamingModel::AssignCallback on_assign;
  if (store)
    on_assign = [&store](const model::StreamingModel::Assigned& as) {
      store->AssignCluster(as.request_id, static_cast<int64_t>(as.cluster_id));
    };
  auto streaming = model::StreamingModel::Create(so, on_assign);
  if (!streaming.ok()) return PrintError(streaming.status().message()), 1;
  model::StreamingModel& sm = **streaming;
  // Every request's likelihood (docs/likelihood.md): the automaton learns
  // from the whole stream, so a request is scored only once it has ended.
  model::likelihood::LikelihoodOptions lo;
  lo.alpha = a.alpha;
  lo.unlikely = a.unlikely;
  model::likelihood::RequestLikelihood likelihood(so.model.canonical, lo);
  const canonical::Canonicalizer canonicalize(so.model.canonical);
  std::unique_ptr<FILE, int (*)(FILE*)> requests_file(nullptr, fclose);
  if (!a.requests_out.empty()) {
    // --requests lines wait in an unnamed spool (the score they end with is
    // known at the end) and go to the file after learning (WriteScoredRequests).
    auto spool = OpenSpool();
    if (!spool.ok()) return PrintError(spool.status().message()), 1;
    requests_file.reset(*spool);
    // Lines of a few KB each: stdio's default 4 KB buffer made a write(2)
    // per line or two.
    setvbuf(requests_file.get(), nullptr, _IOFBF, 1 << 20);
  }
  // Requests as OpenTelemetry traces (docs/otlp.md), streamed out in
  // batches as the join emits them.
  std::unique_ptr<otlp::OtlpExporter> otlp_export;
  if (a.otlp.any()) {
    const trace::TraceMeta& meta = (*reader)->meta();
    // The recording's identity: its header holds its host and start.
    auto created = OpenOtlp(a.otlp, meta.host, otlp::HashBytes(meta.header_json), /*offline=*/true);
    if (!created.ok()) return PrintError(created.status().message()), 1;
    otlp_export = std::move(*created);
  }
  std::string line;
  uint64_t written = 0;
  bool write_failed = false;
  join::Stats st;
  // Requests the server served, each recorded one (complete or not)
  // standing for 1/rate of them (the head-sampling rate in force when it
  // began); the model's complete requests are a share of that.
  const trace::SampleRates& sampling = (*reader)->meta().sampling;
  double served_estimate = 0;
  uint64_t recorded = 0;
  auto sink = [&](model::Request&& r) {
    served_estimate += 1.0 / sampling.RateAt(r.start_ns);
    ++recorded;
    if (otlp_export) otlp_export->Add(r);
    if (store) store->AddRequest(r);
    // One canonical form for the likelihood model and the streaming model.
    std::optional<canonical::CanonicalRequest> canonical;
    if (!r.incomplete) canonical = canonicalize(r);
    const uint32_t state = canonical ? likelihood.Add(r, *canonical) : model::likelihood::kNoState;
    if (requests_file) {
      // Each spooled line begins with the tree state the request ended at
      // ("-" for a connection's line): its score, once learned.
      line = state == model::likelihood::kNoState ? "- " : std::to_string(state) + " ";
      join::WriteRequestJson(&line, r);
      if (fwrite(line.data(), 1, line.size(), requests_file.get()) != line.size()) write_failed = true;
      ++written;
    }
    if (canonical) sm.Add(std::move(r), std::move(*canonical));
    else sm.Add(std::move(r));
  };
  // Connection life (schemas with `messages`): a line each in --requests,
  // counted in --json.
  struct ConnCounts {
    uint64_t connections = 0, requests = 0, one_way = 0, greetings = 0, setups = 0, pipelined = 0, eof_reads = 0,
             empty_reads = 0, events = 0, idle_ns = 0, cpu_ns = 0, softirq_cpu_ns = 0;
  } cc;
  auto conn_sink = [&](model::Connection&& c) {
    cc.connections++;
    cc.requests += c.requests;
    cc.one_way += c.one_way;
    cc.greetings += c.greetings;
    cc.setups += c.setups;
    cc.pipelined += c.pipelined;
    cc.eof_reads += c.eof_reads;
    cc.empty_reads += c.empty_reads;
    cc.events += c.events;
    cc.idle_ns += c.idle_ns;
    cc.cpu_ns += c.cpu_ns;
    cc.softirq_cpu_ns += c.softirq_cpu_ns;
    if (store) store->AddConnection(c);
    if (requests_file) {
      line = "- ";
      join::WriteConnectionJson(&line, c);
      if (fwrite(line.data(), 1, line.size(), requests_file.get()) != line.size()) write_failed = true;
    }
  };
  if (captures.empty()) {
    Status extracted = join::ExtractRequests(**reader, *schema, jo, sink, &st, conn_sink);
    if (!extracted.ok()) return PrintError(extracted.message()), 1;
  } else {
    auto ex = join::Extractor::Create(*schema, (*reader)->meta(), jo, sink);
    if (!ex.ok()) return PrintError(ex.status().message()), 1;
    (*ex)->SetConnectionSink(conn_sink);
    pcap::ForEachRecordMerged(
        **reader, packet_sources, jo.reorder_window, [&](const jdw_record_header* h) { (*ex)->Push(h); },
        [&] { (*ex)->Finish(); });
    st = (*ex)->stats();
    for (size_t i = 0; i < captures.size(); i++) {
      if (!captures[i]->error().ok()) return PrintError(captures[i]->error().message()), 1;
      fprintf(stderr, "jackdaw: %s: %llu IP packets of %llu frames merged into the trace\n", a.pcaps[i].c_str(),
              static_cast<unsigned long long>(captures[i]->stats().packets),
              static_cast<unsigned long long>(captures[i]->stats().frames));
    }
  }
  if (!(*reader)->read_error().ok())
    fprintf(stderr, "jackdaw: warning: %s\n", (*reader)->read_error().message().c_str());
  for (const auto& w : st.warnings) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  fprintf(stderr, "jackdaw: %s\n", join::FormatSummary(st).c_str());
  const trace::TraceMeta& tm = (*reader)->meta();
  const uint64_t lost = tm.losses.total();
  fprintf(stderr, "jackdaw: the capture lost %" PRIu64 " events (%.2f %%)%s; %" PRIu64 " requests incomplete\n", lost,
          LostPercent(lost, st.records_in), lost && !tm.losses_located ? ", not located in time" : "",
          st.requests_incomplete);
  // Every counter of evidence the join could not use: the user must know
  // what the requests lack. (All counters, info too, are in --json.)
  for (const join::StatInfo& info : join::kStatsInfo) {
    const uint64_t v = st.*info.field;
    if (info.severity == join::Severity::kInfo || v == 0) continue;
    fprintf(stderr, "jackdaw: %s: %s = %" PRIu64 ": %s\n", join::SeverityName(info.severity), info.name, v,
            info.description);
  }
  if (otlp_export) {
    Status exported = otlp_export->Finish();
    fputs(otlp_export->Summary().c_str(), stderr);
    if (!exported.ok()) return PrintError(exported.message()), 1;
  }
  likelihood.Learn();
  if (requests_file) {
    if (fflush(requests_file.get()) != 0 || write_failed)
      return PrintError("spooling " + a.requests_out + " failed: " + strerror(errno) + " (disk full? TMPDIR)"), 1;
    Status scored = WriteScoredRequests(requests_file.get(), likelihood, a.requests_out);
    if (!scored.ok()) return PrintError(scored.message()), 1;
    fprintf(stderr, "jackdaw: %llu requests%s written to %s\n", static_cast<unsigned long long>(written),
            cc.connections ? (" and " + std::to_string(cc.connections) + " connections").c_str() : "",
            OutputName(a.requests_out).c_str());
  }
  const uint64_t incomplete = sm.stats().incomplete;
  if (sm.stats().requests == 0 && incomplete) {
    PrintError("all " + std::to_string(incomplete) +
               " requests are incomplete (the capture lost records while they ran): record again with a larger "
               "--buffer-size or fewer probes");
    return 1;
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
    model->accounted_cpu_fraction = join::AccountedCpuFraction(st);
  model->likelihood = likelihood.Summary();
  bool store_lost = false;
  if (store) {
    // The model as of the trace's last request.
    SendFinalModel(store.get(), sm, sm.warmed_up() ? nullptr : &*model, "analyze", store->last_end_wall_ns());
    const http::SenderStats s = store->Finish();
    fputs(store->Summary(s).c_str(), stderr);
    store_lost = s.requests_dropped + s.requests_failed > 0;
  }
  // The saved model is for scoring this schema's requests (live --baseline
  // checks it).
  model->likelihood.model.schema = schema->name;
  {
    const model::likelihood::LikelihoodSummary& l = model->likelihood;
    fprintf(stderr,
            "jackdaw: likelihood model: %llu requests, prefix tree of %llu states merged to %llu states and %llu "
            "transitions (alpha %g) in %.3f s\n",
            static_cast<unsigned long long>(l.requests_learned), static_cast<unsigned long long>(l.prefix_tree_states),
            static_cast<unsigned long long>(l.states), static_cast<unsigned long long>(l.transitions), l.alpha,
            l.learn_seconds);
  }
  // The retained requests, scored afresh: the same score as their line's.
  for (size_t i = 0; i < requests.size() && i < model->requests.size(); ++i)
    model->requests[i].log_likelihood = likelihood.Score(requests[i]);
  model->sample_mode = sampling.mode;
  if (sampling.on() && served_estimate > 0) model->sample_rate = double(sm.stats().requests) / served_estimate;
  if (sampling.on() && sampling.left_out_exchanges) {
    // Counted, where the trace has the count: every exchange the left-out
    // connections made, as the kernel saw them begin.
    served_estimate = double(recorded + *sampling.left_out_exchanges);
  } else if (const uint64_t served_ns = st.cpu_charged_ns + st.cpu_conn_ns;
             sampling.on() && st.sample_gaps > 0 && served_ns > 0) {
    // The share of the work the sample recorded, measured rather than
    // asked for: the run time of threads on connections outside the sample
    // (its gaps) against the run time the recorded requests and their
    // connections took. With few long-lived connections the two differ
    // (one connection of ten is a tenth of the work, whatever the rate),
    // and every recorded request stands for 1/share of those served.
    const double realized = double(served_ns) / double(served_ns + st.cpu_unsampled_ns);
    served_estimate = double(recorded) / realized;
  }
  if (sampling.on() && served_estimate > 0) model->sampled_share = double(sm.stats().requests) / served_estimate;
  if (cc.connections)
    fprintf(stderr,
            "jackdaw: %llu connections: %llu requests, %llu one-way messages, %llu greetings, %llu set-up "
            "exchanges, %llu pipelined; their life (accept, set-up, idle and end-of-file reads, close) took %.3f ms "
            "of CPU, apportioned to their requests (connection_cpu_ns), not in their totals\n",
            static_cast<unsigned long long>(cc.connections), static_cast<unsigned long long>(cc.requests),
            static_cast<unsigned long long>(cc.one_way), static_cast<unsigned long long>(cc.greetings),
            static_cast<unsigned long long>(cc.setups),
            static_cast<unsigned long long>(cc.pipelined), double(cc.cpu_ns + cc.softirq_cpu_ns) / 1e6);
  if (sm.warmed_up())
    fprintf(stderr,
            "jackdaw: streamed %llu requests (model from the first %u, then online; %llu kept as "
            "cluster samples for the reports below)\n",
            static_cast<unsigned long long>(sm.stats().requests), a.warmup,
            static_cast<unsigned long long>(requests.size()));
  if (incomplete)
    std::cout << "warning: " << incomplete << " of " << incomplete + sm.stats().requests
              << " requests incomplete (the capture lost records while they ran): kept out of clusters, anomalies "
                 "and totals" << (requests_file ? "; marked \"incomplete\" in " + a.requests_out : std::string())
              << "\n";
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
         j["summary"]["incomplete"] = incomplete;
         if (schema->message_attr >= 0)
           j["connections"] = {{"count", cc.connections},       {"requests", cc.requests},
                               {"one_way", cc.one_way},         {"greetings", cc.greetings},
                               {"setups", cc.setups},
                               {"pipelined", cc.pipelined},     {"eof_reads", cc.eof_reads},
                               {"empty_reads", cc.empty_reads}, {"events", cc.events},
                               {"idle_ns", cc.idle_ns},         {"cpu_ns", cc.cpu_ns},
                               {"softirq_cpu_ns", cc.softirq_cpu_ns}};
         return WriteOutput(a.json_out, j.dump(1) + "\n");
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
    fprintf(stderr, "jackdaw: %s written to %s\n", o.what, OutputName(o.path).c_str());
  }
  if (!(*reader)->damage().ok())
    fprintf(stderr, "jackdaw: warning: analysed a salvaged trace: %s\n", (*reader)->damage().message().c_str());
  if (store_lost) {
    PrintError("ClickHouse " + a.clickhouse.url + " did not store every request (see the line above): the store " +
               "went away or refused the rows during the analysis; check it and run the analysis again");
    return 1;
  }
  return ExitFor(**reader);
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
      "  jackdaw analyze web.jdw --schema tcp-threadpool --pcap-input switch-port.pcapng\n"
      "  jackdaw analyze web.jdw --schema tcp-threadpool --json - | jq .summary\n"
      "Schemas by name are looked up beside the binary (schemas/NAME.schema); a path works too.");
  sub->add_option("file", args->file, "trace file (.jdw)")->type_name("FILE")->required();
  sub->add_option("-s,--schema", args->schema,
                  "schema name (testserver, tcp-threadpool) or path; not needed for a trace of "
                  "interaction summaries (jackdaw interactions -o), whose interactions are clustered")
      ->type_name("SCHEMA");
  Output(sub->add_option("--requests", args->requests_out, "write the requests as JSON lines")->type_name("FILE"));
  Output(sub->add_option("--json", args->json_out, "write the whole model as JSON")->type_name("FILE"));
  sub->add_option("--csv", args->csv_dir, "write one CSV per table into this directory")->type_name("DIR");
  Output(sub->add_option("--perfetto", args->perfetto_out,
                         "write a Perfetto/Chrome trace of requests and canonical forms")
             ->type_name("FILE"));
  Output(sub->add_option("--html", args->html_out, "write a self-contained HTML report")->type_name("FILE"));
  AddOtlpOptions(sub, &args->otlp);
  AddClickHouseOptions(sub, &args->clickhouse);
  CLI::Option* pcap_input =
      sub->add_option("--pcap-input", args->pcaps,
                      "also join the packets of this pcap/pcapng file (e.g. tcpdump on another machine or a "
                      "switch port), by their connections; repeatable")
          ->type_name("FILE");
  HiddenAlias(sub, "--pcap", args->pcaps, pcap_input);
  // A day either way: any real clock error, far inside the nanosecond
  // offset's range (which 1e300 overflowed).
  sub->add_option("--pcap-offset", args->pcap_offset_s,
                  "how far the --pcap-input machine's wall clock is ahead of this trace's, in seconds "
                  "(0: NTP-synced)")
      ->type_name("SECONDS")
      ->capture_default_str()
      ->check(FiniteRange(-86400, 86400, false, " seconds"));
  sub->add_option("--threshold", args->threshold, "clustering distance threshold (default: derived from the data)")
      ->type_name("DISTANCE")
      ->check(FiniteRange(0, 1e12, true, ""));
  AddReorderWindow(sub, &args->window_s);
  sub->add_flag("--no-refine", args->no_refine, "skip the reassignment pass after incremental clustering");
  sub->add_option("--warmup", args->warmup,
                  "requests clustered as a batch (threshold, normalisation) before the rest streams online")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(2, 1 << 24));
  sub->add_option("--sample", args->sample, "requests kept per cluster for the reports (memory bound)")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(2, 4096));
  sub->add_option("--unlikely", args->unlikely,
                  "requests in the least-likely list (text report and --json \"unlikely\"; docs/likelihood.md)")
      ->type_name("N")
      ->capture_default_str()
      ->check(IntRange(0, 100000));
  sub->add_option("--alpha", args->alpha,
                  "ALERGIA's merge test for the likelihood model: smaller merges more states (docs/likelihood.md)")
      ->type_name("P")
      ->capture_default_str()
      ->check(FiniteRange(0, 1, true, ""));
  sub->add_flag("--salvage", args->salvage, "analyse the intact part of a damaged trace");
  sub->add_flag("-q,--quiet", args->quiet, "no progress bar");
  auto argv0 = SelfPathAtParse(sub);
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
