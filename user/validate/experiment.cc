#include "validate/experiment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "join/extractor.h"
#include "model/scoring.h"
#include "model/workload_model.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"

namespace jackdaw::validate {
namespace {

pid_t Spawn(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd) {
  pid_t pid = fork();
  if (pid == 0) {
    if (stdout_fd >= 0) dup2(stdout_fd, STDOUT_FILENO);
    if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

uint16_t PortOf(const std::string& endpoint) {
  auto c = endpoint.rfind(':');
  return c == std::string::npos ? 0 : static_cast<uint16_t>(strtoul(endpoint.c_str() + c + 1, nullptr, 10));
}

std::string Slug(const Workload& w) {
  std::string s;
  for (char c : w.name) s += c == '/' ? '_' : c;
  return s + "_c" + std::to_string(w.clients);
}

}  // namespace

std::vector<Workload> PaperWorkloads(bool quick, int requests) {
  struct Row {
    const char* table;
    const char* name;
    const char* mix;
  };
  static const Row kRows[] = {
      {"2", "A", "A:1"},        {"2", "B", "B:1"},          {"2", "A/B", "A:1,B:1"},
      {"3", "C", "C:1"},        {"3", "D", "D:1"},          {"3", "C/D", "C:1,D:1"},
      {"4", "E", "E:1"},        {"4", "B/E", "B:1,E:1"},    {"4", "A/B/E", "A:1,B:1,E:1"},
      {"5", "F", "F:1"},        {"5", "A/F", "A:1,F:1"},    {"5", "A/E/F", "A:1,E:1,F:1"},
      {"5", "A/B/E/F", "A:1,B:1,E:1,F:1"},
  };
  std::vector<Workload> out;
  for (const auto& r : kRows) {
    if (quick && std::string(r.name) != "A/B/E/F") continue;
    for (int clients : {1, 5}) {
      if (quick && clients != 5) continue;
      out.push_back(Workload{r.table, r.name, r.mix, clients, requests});
    }
  }
  return out;
}

StatusOr<std::vector<Workload>> SelectWorkloads(const std::vector<Workload>& all,
                                                const std::vector<std::string>& only) {
  std::vector<char> chosen(all.size(), 0);
  for (const std::string& item : only) {
    std::string name = item;
    int clients = 0;  // any
    if (auto colon = item.rfind(':'); colon != std::string::npos) {
      name = item.substr(0, colon);
      const std::string n = item.substr(colon + 1);
      char* end = nullptr;
      const long v = strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v <= 0)
        return ErrStatus("--only %s: expected WORKLOAD or WORKLOAD:CLIENTS (e.g. A/E/F:5)", item.c_str());
      clients = static_cast<int>(v);
    }
    bool any = false;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name == name && (clients == 0 || all[i].clients == clients)) chosen[i] = any = true;
    }
    if (!any) {
      std::string known;
      std::set<std::string> seen;
      std::set<int> counts;
      for (const Workload& w : all) {
        counts.insert(w.clients);
        if (!seen.insert(w.name).second) continue;
        known += known.empty() ? "" : ", ";
        known += w.name;
      }
      std::string cs;
      for (int c : counts) cs += (cs.empty() ? "" : ", ") + std::to_string(c);
      return ErrStatus("--only %s: no such workload (known: %s; clients: %s)", item.c_str(), known.c_str(),
                       cs.c_str());
    }
  }
  std::vector<Workload> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (chosen[i]) out.push_back(all[i]);
  return out;
}

StatusOr<RecordedRun> RecordWorkload(const RunOptions& o, const Workload& w) {
  RecordedRun run;
  run.workload = w;
  run.trace = o.work_dir + "/" + Slug(w) + ".jdw";
  run.truth = o.work_dir + "/" + Slug(w) + ".truth.jsonl";
  const std::string server = o.bin_dir + "/jackdaw-testserver";
  std::vector<std::string> rec = {o.bin_dir + "/jackdaw", "record", "-q", "--usdt", server, "-o", run.trace,
                                  "--", server, "--port", "0", "--workers", std::to_string(o.workers),
                                  "--helpers", std::to_string(o.helpers)};
  if (o.direct_io) rec.push_back("--direct-io");
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrStatus("pipe: %s", strerror(errno));
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const uint64_t t0 = MonotonicNs();
  pid_t recorder = Spawn(rec, out[1], o.verbose ? -1 : devnull);
  close(out[1]);
  // The server prints "listening on 127.0.0.1:PORT" once it accepts.
  std::string line;
  char c;
  int port = 0;
  while (read(out[0], &c, 1) == 1) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (auto p = line.find("listening on "); p != std::string::npos) {
      port = atoi(line.c_str() + line.rfind(':') + 1);
      break;
    }
    line.clear();
  }
  if (port == 0) {
    kill(recorder, SIGINT);
    WaitExit(recorder);
    close(out[0]);
    close(devnull);
    return ErrStatus("the test server did not start under jackdaw record (run with --verbose to see why)");
  }
  std::vector<std::string> load = {o.bin_dir + "/jackdaw-load", "--url", "http://127.0.0.1:" + std::to_string(port),
                                   "-n", std::to_string(w.requests), "--mix", w.mix, "-c",
                                   std::to_string(w.clients), "--ground-truth", run.truth};
  pid_t loader = Spawn(load, o.verbose ? -1 : devnull, o.verbose ? -1 : devnull);
  const int load_rc = WaitExit(loader);
  kill(recorder, SIGINT);
  const int rec_rc = WaitExit(recorder);
  close(out[0]);
  close(devnull);
  run.wall_s = double(MonotonicNs() - t0) / 1e9;
  if (load_rc != 0) return ErrStatus("jackdaw-load failed (exit %d) on workload %s", load_rc, w.name.c_str());
  if (rec_rc != 0) return ErrStatus("jackdaw record failed (exit %d) on workload %s", rec_rc, w.name.c_str());
  return run;
}

namespace {

StatusOr<std::vector<TruthEntry>> ReadTruthLines(const std::string& path, bool setup) {
  std::ifstream in(path);
  if (!in) return ErrStatus("cannot read ground truth %s", path.c_str());
  std::vector<TruthEntry> out;
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) return ErrStatus("%s:%zu: not JSON", path.c_str(), n);
    if (j.value("setup", false) != setup) continue;
    TruthEntry t;
    t.type = j.value("type", std::string());
    t.client_port = j.value("local_port", uint16_t{0});
    t.send_mono_ns = j.value("send_mono_ns", uint64_t{0});
    t.recv_mono_ns = j.value("recv_mono_ns", uint64_t{0});
    t.req_id = j.value("req_id", uint64_t{0});
    t.server_cpu_ns = j.value("server_cpu_ns", uint64_t{0});
    out.push_back(t);
  }
  return out;
}

}  // namespace

StatusOr<std::vector<TruthEntry>> ReadGroundTruth(const std::string& path) { return ReadTruthLines(path, false); }

StatusOr<std::vector<TruthEntry>> ReadSetupExchanges(const std::string& path) { return ReadTruthLines(path, true); }

uint64_t InnermostTierCpuNs(const model::Request& r) {
  if (r.processes.empty()) return r.totals.cpu_ns;
  uint32_t deepest = 0;
  for (const auto& p : r.processes) deepest = std::max(deepest, p.tier);
  uint64_t cpu = 0;
  for (const auto& p : r.processes)
    if (p.tier == deepest) cpu += p.cpu_ns;
  return cpu;
}

std::vector<MatchSpan> MatchSpans(const std::vector<model::Request>& reqs, bool shared_connections,
                                  uint64_t* overhang) {
  std::vector<MatchSpan> out;
  out.reserve(reqs.size());
  std::map<uint64_t, std::map<uint32_t, uint64_t>> exchange_start;  // connection -> exchange -> start
  if (shared_connections)
    for (const auto& r : reqs)
      if (r.has_message) exchange_start[r.connection_id][r.exchange] = r.start_ns;
  for (const auto& r : reqs) {
    MatchSpan m{r.start_ns, r.end_ns};
    if (shared_connections && r.has_message) {
      const auto& ex = exchange_start[r.connection_id];
      auto next = ex.upper_bound(r.exchange);
      if (next != ex.end() && next->second > r.start_ns && next->second < r.end_ns) {
        m.end_ns = next->second;
        ++*overhang;
      }
    }
    out.push_back(m);
  }
  return out;
}

StatusOr<SchemaResult> AnalyzeRun(const RecordedRun& run, const std::string& schema_name,
                                  const std::vector<std::string>& schema_dirs) {
  SchemaResult res;
  res.schema = schema_name;
  ASSIGN_OR_RETURN(auto truth, ReadGroundTruth(run.truth));
  res.sent = truth.size();
  ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(run.trace));
  ASSIGN_OR_RETURN(auto schema, schema::LoadSchema(schema_name, schema_dirs));
  ASSIGN_OR_RETURN(auto extraction, join::ExtractRequests(*reader, schema, join::Options{}));
  const auto& reqs = extraction.requests;
  const auto& st = extraction.stats;
  res.extracted = reqs.size();
  res.summary = join::FormatSummary(st);
  // Connection life (schemas with `messages`) is accounted too: charged to
  // the connection it belongs to, not lost; its share is reported apart.
  res.accounted_cpu = join::AccountedCpuFraction(st);
  res.connection_cpu =
      st.cpu_observed_ns ? double(st.cpu_conn_ns + st.softirq_conn_ns) / double(st.cpu_observed_ns) : 0;
  res.connections = extraction.connections.size();

  // Match by client port, and by time among entries that reused the port.
  std::unordered_multimap<uint16_t, size_t> by_port;
  for (size_t i = 0; i < truth.size(); ++i) by_port.emplace(truth[i].client_port, i);
  auto best_for_port = [&](uint16_t port, const model::Request& r) -> int64_t {
    int64_t best = -1;
    int64_t best_overlap = INT64_MIN;
    auto [lo, hi] = by_port.equal_range(port);
    for (auto it = lo; it != hi; ++it) {
      const TruthEntry& t = truth[it->second];
      const int64_t overlap = int64_t(std::min(t.recv_mono_ns, r.end_ns)) - int64_t(std::max(t.send_mono_ns, r.start_ns));
      if (overlap > best_overlap) best_overlap = overlap, best = int64_t(it->second);
    }
    return best;
  };
  // A request matching no client request may be a set-up exchange.
  ASSIGN_OR_RETURN(auto setups, ReadSetupExchanges(run.truth));
  // A set-up exchange the client logged on this port that the request
  // overlaps by more than half of the shorter: it is that set-up.
  auto mostly_setup = [&](uint16_t port, const MatchSpan& r) {
    for (const TruthEntry& t : setups) {
      if (t.client_port != port) continue;
      const int64_t overlap = int64_t(std::min(t.recv_mono_ns, r.end_ns)) - int64_t(std::max(t.send_mono_ns, r.start_ns));
      const int64_t shorter = std::min(int64_t(t.recv_mono_ns - t.send_mono_ns), int64_t(r.end_ns - r.start_ns));
      if (overlap > 0 && 2 * overlap > shorter) return true;
    }
    return false;
  };
  // Shared connections: every entry on the port the request overlaps by
  // more than half of the shorter interval, else the best positive overlap.
  auto shared_hits = [&](uint16_t port, const MatchSpan& r, std::set<size_t>* hits) {
    int64_t best = -1, best_overlap = 0;
    bool any = false;
    auto [lo, hi] = by_port.equal_range(port);
    for (auto it = lo; it != hi; ++it) {
      const TruthEntry& t = truth[it->second];
      const int64_t overlap = int64_t(std::min(t.recv_mono_ns, r.end_ns)) - int64_t(std::max(t.send_mono_ns, r.start_ns));
      if (overlap <= 0) continue;
      const int64_t shorter = std::min(int64_t(t.recv_mono_ns - t.send_mono_ns), int64_t(r.end_ns - r.start_ns));
      if (2 * overlap > shorter) hits->insert(it->second), any = true;
      if (overlap > best_overlap) best_overlap = overlap, best = int64_t(it->second);
    }
    // Else the best positive overlap, unless the request is mostly a
    // set-up exchange (a startup whose backend works on past its answer
    // and brushes the first query).
    if (!any && best >= 0 && !mostly_setup(port, r)) hits->insert(size_t(best));
  };
  auto is_setup = [&](const model::Request& r) {
    for (const TruthEntry& t : setups) {
      if (std::min(t.recv_mono_ns, r.end_ns) < std::max(t.send_mono_ns, r.start_ns)) continue;
      for (const auto& c : r.connections)
        if (PortOf(c.remote) == t.client_port || PortOf(c.local) == t.client_port) return true;
    }
    return false;
  };
  const std::vector<MatchSpan> spans = MatchSpans(reqs, run.shared_connections, &res.overhang);
  std::vector<int> truth_hits(truth.size(), 0);
  std::vector<int> truth_single(truth.size(), 0);  // hits by requests matching only it
  std::unordered_map<uint64_t, std::string> labels;  // request id -> type
  double charged_matched = 0, server_matched = 0;
  for (size_t ri = 0; ri < reqs.size(); ++ri) {
    const model::Request& r = reqs[ri];
    const MatchSpan& span = spans[ri];
    std::set<size_t> hits;
    for (const auto& c : r.connections) {
      for (uint16_t p : {PortOf(c.remote), PortOf(c.local)}) {
        if (run.shared_connections) {
          shared_hits(p, span, &hits);
          continue;
        }
        const int64_t h = best_for_port(p, r);
        if (h >= 0) hits.insert(size_t(h));
      }
    }
    if (hits.size() == 1) ++truth_single[*hits.begin()];
    if (hits.empty()) {
      ++res.unmatched;
      if (is_setup(r)) ++res.setup;
      continue;
    }
    if (hits.size() > 1) ++res.merged;
    for (size_t h : hits) ++truth_hits[h];
    if (hits.size() == 1) {
      const TruthEntry& t = truth[*hits.begin()];
      labels[r.id] = t.type;
      ++res.matched;
      charged_matched += double(r.totals.cpu_ns);
      server_matched += double(t.server_cpu_ns);
      if (t.server_cpu_ns) {
        ++res.measured_cpu;
        const double inner = double(InnermostTierCpuNs(r));
        if (std::fabs(inner - double(t.server_cpu_ns)) <= 0.1 * double(t.server_cpu_ns)) ++res.measured_cpu_within_10pct;
      }
    }
  }
  for (size_t i = 0; i < truth.size(); ++i) {
    const int h = truth_hits[i];
    if (h == 0) ++res.missing;
    if (h > 1) ++res.split;
    if (h == 1 && truth_single[i] == 1) ++res.exact;
  }
  res.accounted_vs_server = server_matched > 0 ? charged_matched / server_matched : 0;

  model::ModelOptions mo;
  mo.accounted_cpu_fraction = res.accounted_cpu;
  ASSIGN_OR_RETURN(auto m, model::BuildModel(reqs, mo));
  for (const auto& c : m.clusters) {
    res.clusters.push_back(ClusterRow{c.label, c.size, model::Composition(c, labels), c.mean.cpu_ns / 1e6});
  }
  res.avg_diameter = m.avg_diameter;
  double min_sep = 0;
  bool first = true;
  for (const auto& c : m.clusters) {
    if (c.nearest_cluster < 0) continue;
    if (first || c.min_separation < min_sep) min_sep = c.min_separation;
    first = false;
  }
  res.min_separation = min_sep;
  res.model_error_cpu = m.error.per_resource[0];
  res.model_error_disk = m.error.per_resource[1];
  res.model_error_net = m.error.per_resource[2];
  res.model_error = m.error.combined;
  auto score = model::ScoreAgainstTruth(m, labels);
  res.purity = score.purity;
  res.ari = score.adjusted_rand_index;
  res.anomalies = m.anomalies.size();
  // Each type's majority cluster; requests elsewhere are "outside".
  std::map<std::string, std::map<uint32_t, uint64_t>> per_type;
  for (const auto& s : m.requests) {
    auto it = labels.find(s.id);
    if (it != labels.end()) ++per_type[it->second][s.cluster];
  }
  uint64_t outside = 0, labelled = 0;
  std::map<std::string, uint32_t> home;
  for (const auto& [type, counts] : per_type) {
    uint32_t best = 0;
    uint64_t best_n = 0, total = 0;
    for (auto [cl, n] : counts) {
      total += n;
      if (n > best_n) best = cl, best_n = n;
    }
    home[type] = best;
    outside += total - best_n;
    labelled += total;
  }
  res.outside_type_cluster = labelled ? double(outside) / double(labelled) : 0;
  std::set<uint32_t> bef;
  int present = 0;
  for (const char* t : {"B", "E", "F"}) {
    if (home.count(t)) {
      ++present;
      bef.insert(home[t]);
    }
  }
  res.bef_separate = int(bef.size()) == present;
  return res;
}

void PrintTables(const std::vector<std::pair<Workload, std::vector<SchemaResult>>>& rows, FILE* out) {
  static const char* kTitles[] = {"", "", "Table 2: CPU-bound (A longspin 30 ms, B shortspin 15 ms)",
                                  "Table 3: disk (C small 12 KB, D tiny 5 KB, read with O_DIRECT)",
                                  "Table 4: concurrency (E parspin: two threads x 15 ms)",
                                  "Table 5: cross-thread RPC (F rpcspin: 7.5 + 15 + 7.25 ms)"};
  std::string current;
  for (const auto& [w, results] : rows) {
    if (w.table != current) {
      current = w.table;
      const int t = atoi(w.table.c_str());
      fprintf(out, "\n%s\n", t >= 2 && t <= 5 ? kTitles[t] : w.table.c_str());
      fprintf(out, "%-8s %3s %-15s %9s %8s %6s %6s %6s %8s %8s %8s %8s %6s %7s %6s  %s\n", "workload", "cl",
              "schema", "extracted", "merg/spl", "acct%", "vsSrv", "clust", "avgDia", "minSep", "errCPU",
              "errAll", "purity", "ARI", "out%", "clusters (size: make-up)");
    }
    for (const auto& r : results) {
      std::string cl;
      for (const auto& c : r.clusters) {
        if (!cl.empty()) cl += ", ";
        cl += c.composition.empty() ? std::to_string(c.size) : c.composition;
        if (cl.size() > 70) {
          cl += ", ...";
          break;
        }
      }
      char ms[32];
      snprintf(ms, sizeof(ms), "%llu/%llu", static_cast<unsigned long long>(r.merged),
               static_cast<unsigned long long>(r.split));
      char ex[32];
      snprintf(ex, sizeof(ex), "%llu/%llu", static_cast<unsigned long long>(r.matched),
               static_cast<unsigned long long>(r.sent));
      fprintf(out, "%-8s %3d %-15s %9s %8s %6.1f %6.2f %6zu %8.3f %8.3f %7.2f%% %7.2f%% %6.3f %7.3f %5.1f%%  %s\n",
              w.name.c_str(), w.clients, r.schema.c_str(), ex, ms, 100 * r.accounted_cpu, r.accounted_vs_server,
              r.clusters.size(), r.avg_diameter, r.min_separation, 100 * r.model_error_cpu, 100 * r.model_error,
              r.purity, r.ari, 100 * r.outside_type_cluster, cl.c_str());
    }
  }
  fprintf(out,
          "\nextracted: requests matched one-to-one to the load driver's ground truth / requests sent;\n"
          "merg/spl: requests holding several truth entries / truth entries split over several requests;\n"
          "acct%%: CPU charged to requests / on-CPU time of all server threads; vsSrv: charged CPU / the\n"
          "server's own thread-CPU measurement of its spins; out%%: requests outside their type's cluster.\n");
}

}  // namespace jackdaw::validate
