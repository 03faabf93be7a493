#include "validate/real_interactions.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include "join/extractor.h"
#include "schema/schema.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"
#include "validate/jackdaw_child.h"

namespace jackdaw::validate {
namespace {

constexpr uint64_t kSlackNs = 1'000'000;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string Stem(const std::string& trace) {
  const std::string ext = ".jdw";
  if (trace.size() > ext.size() && trace.compare(trace.size() - ext.size(), ext.size(), ext) == 0)
    return trace.substr(0, trace.size() - ext.size());
  return trace;
}

uint16_t PortOf(const std::string& endpoint) {
  const auto c = endpoint.rfind(':');
  return c == std::string::npos ? 0 : static_cast<uint16_t>(strtoul(endpoint.c_str() + c + 1, nullptr, 10));
}

// At least half of the shorter interval in common; a point inside the other.
bool Overlaps(const ConnSpan& a, const ConnSpan& b) {
  const uint64_t lo = std::max(a.start_ns, b.start_ns);
  const uint64_t hi = std::min(std::max(a.start_ns, a.end_ns), std::max(b.start_ns, b.end_ns));
  if (hi < lo) return false;
  const uint64_t shorter = std::min(a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0,
                                    b.end_ns > b.start_ns ? b.end_ns - b.start_ns : 0);
  return 2 * (hi - lo) >= shorter;
}

ConnSpan SpanOf(const jdw_interaction& ia) {
  // No response (the connection closed first): the request alone.
  return ConnSpan{{ia.rport}, ia.req_start, ia.resp_end ? ia.resp_end : ia.req_end};
}

// The recorder's closing line: "... N connections tracked, M not (table
// full), E evicted idle, L records lost ...".
uint64_t LostFromLog(const std::string& log) {
  const std::string text = ReadAll(log);
  const auto at = text.rfind("connections tracked, ");
  if (at == std::string::npos) return 0;
  unsigned long long full = 0, evicted = 0, lost = 0;
  if (sscanf(text.c_str() + at, "connections tracked, %llu not (table full), %llu evicted idle, %llu records lost",
             &full, &evicted, &lost) != 3)
    return 0;
  return full + lost;
}

}  // namespace

OneToOne MatchOneToOne(const std::vector<ConnSpan>& left, const std::vector<ConnSpan>& right) {
  OneToOne out;
  out.left = left.size();
  out.right = right.size();
  std::unordered_multimap<uint16_t, size_t> by_port;
  for (size_t j = 0; j < right.size(); ++j) {
    std::set<uint16_t> ports(right[j].ports.begin(), right[j].ports.end());
    for (uint16_t p : ports) by_port.emplace(p, j);
  }
  std::vector<std::vector<size_t>> hits(left.size());
  std::vector<uint32_t> right_hits(right.size(), 0);
  for (size_t i = 0; i < left.size(); ++i) {
    std::set<size_t> h;
    for (uint16_t p : left[i].ports) {
      auto [lo, hi] = by_port.equal_range(p);
      for (auto it = lo; it != hi; ++it)
        if (Overlaps(left[i], right[it->second])) h.insert(it->second);
    }
    hits[i].assign(h.begin(), h.end());
    for (size_t j : h) ++right_hits[j];
  }
  for (size_t i = 0; i < left.size(); ++i) {
    if (hits[i].empty()) ++out.left_unmatched;
    else if (hits[i].size() > 1) ++out.left_multi;
    else if (right_hits[hits[i][0]] == 1) ++out.one_to_one, out.pairs.push_back({i, hits[i][0]});
  }
  for (uint32_t n : right_hits) {
    if (n == 0) ++out.right_unmatched;
    else if (n > 1) ++out.right_multi;
  }
  return out;
}

std::string InteractionsPathFor(const std::string& trace) { return Stem(trace) + ".ia.jdw"; }
std::string InteractionsLogFor(const std::string& trace) { return Stem(trace) + ".ia.log"; }

StatusOr<pid_t> StartInteractionRecorder(const std::string& bin_dir, pid_t server, const std::string& trace) {
  return StartJackdawChild({bin_dir + "/jackdaw", "interactions", "--pid", std::to_string(server), "--by",
                            "interaction", "-o", InteractionsPathFor(trace)},
                           InteractionsLogFor(trace), "jackdaw: following interactions");
}

Status StopInteractionRecorder(pid_t recorder, const std::string& trace) {
  kill(recorder, SIGINT);
  int status = 0;
  while (waitpid(recorder, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return ErrStatus("jackdaw interactions failed (status %d): %s", status, ReadAll(InteractionsLogFor(trace)).c_str());
}

StatusOr<std::vector<jdw_interaction>> ReadServerInteractions(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(path));
  std::vector<jdw_interaction> out;
  reader->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_INTERACTION || h.size < sizeof(jdw_interaction_record)) return;
    jdw_interaction ia;
    memcpy(&ia, trace::Payload(h), sizeof(ia));
    if (ia.role == JDW_ROLE_SERVER) out.push_back(ia);
  });
  return out;
}

InteractionAgreement CompareInteractions(const std::vector<TruthEntry>& truth,
                                         const std::vector<jdw_interaction>& interactions,
                                         const std::vector<ConnSpan>& requests,
                                         const std::vector<TruthEntry>& setups) {
  InteractionAgreement a;
  std::vector<ConnSpan> sent, ias;
  for (const TruthEntry& t : truth) sent.push_back(ConnSpan{{t.client_port}, t.send_mono_ns, t.recv_mono_ns});
  for (const jdw_interaction& ia : interactions) {
    ias.push_back(SpanOf(ia));
    if (ia.flags & ~JDW_IA_CLOSED) ++a.flagged;
  }
  a.truth = MatchOneToOne(sent, ias);
  a.join = MatchOneToOne(ias, requests);
  if (!setups.empty()) {
    std::vector<ConnSpan> set_up;
    for (const TruthEntry& t : setups) set_up.push_back(ConnSpan{{t.client_port}, t.send_mono_ns, t.recv_mono_ns});
    a.setup = MatchOneToOne(set_up, ias).one_to_one;
  }
  for (auto [t, i] : a.truth.pairs) {
    const jdw_interaction& ia = interactions[i];
    const uint64_t end = ia.resp_end ? ia.resp_end : ia.req_end;
    if (ia.req_start + kSlackNs >= truth[t].send_mono_ns && end <= truth[t].recv_mono_ns + kSlackNs) ++a.inside_1ms;
  }
  return a;
}

StatusOr<InteractionAgreement> CompareRunInteractions(const RecordedRun& run, const std::string& schema_name,
                                                      const std::vector<std::string>& schema_dirs) {
  ASSIGN_OR_RETURN(auto truth, ReadGroundTruth(run.truth));
  ASSIGN_OR_RETURN(auto setups, ReadSetupExchanges(run.truth));
  const std::string path = InteractionsPathFor(run.trace);
  if (access(path.c_str(), R_OK) != 0)
    return ErrStatus("no kernel interactions were recorded (%s): %s", path.c_str(),
                     ReadAll(InteractionsLogFor(run.trace)).c_str());
  ASSIGN_OR_RETURN(auto interactions, ReadServerInteractions(path));
  ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(run.trace));
  ASSIGN_OR_RETURN(auto schema, schema::LoadSchema(schema_name, schema_dirs));
  ASSIGN_OR_RETURN(auto extraction, join::ExtractRequests(*reader, schema, join::Options{}));
  // On a persistent connection a request is matched by its exchange's
  // interval, as against the clients (MatchSpans): its own work past the
  // next exchange's start would overlap that exchange's interaction too.
  uint64_t overhang = 0;
  const std::vector<MatchSpan> spans = MatchSpans(extraction.requests, run.shared_connections, &overhang);
  std::vector<ConnSpan> requests;
  for (size_t i = 0; i < extraction.requests.size(); ++i) {
    const auto& r = extraction.requests[i];
    ConnSpan s{{}, spans[i].start_ns, spans[i].end_ns};
    for (const auto& c : r.connections) s.ports.push_back(PortOf(c.remote)), s.ports.push_back(PortOf(c.local));
    requests.push_back(std::move(s));
  }
  InteractionAgreement a = CompareInteractions(truth, interactions, requests, setups);
  a.lost = LostFromLog(InteractionsLogFor(run.trace));
  return a;
}

nlohmann::json AgreementJson(const InteractionAgreement& a) {
  auto side = [](const OneToOne& m) {
    return nlohmann::json{{"left", m.left}, {"right", m.right}, {"one_to_one", m.one_to_one},
                          {"left_unmatched", m.left_unmatched}, {"left_multi", m.left_multi},
                          {"right_unmatched", m.right_unmatched}, {"right_multi", m.right_multi}};
  };
  return {{"sent", a.truth.left}, {"interactions", a.truth.right}, {"join_requests", a.join.right},
          {"truth_vs_interactions", side(a.truth)}, {"interactions_vs_join", side(a.join)},
          {"flagged", a.flagged}, {"inside_client_interval_1ms", a.inside_1ms}, {"lost", a.lost},
          {"setup_interactions", a.setup}};
}

void PrintInteractionTable(const std::vector<std::pair<std::string, InteractionAgreement>>& rows, FILE* out) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  fprintf(out, "\nKernel interactions (jackdaw interactions, beside the full capture) against the clients and the join\n");
  fprintf(out, "%-17s %5s %5s %5s  %-18s %-18s %-11s %9s %5s\n", "workload", "sent", "ia", "join", "truth 1:1 (m/x)",
          "join 1:1 (m/x)", "join (e/x)", "in 1 ms", "lost");
  for (const auto& [name, a] : rows) {
    char t[48], j[48], jr[32], in[24], ia[32];
    snprintf(ia, sizeof(ia), a.setup ? "%llu(%llus)" : "%llu", u(a.truth.right), u(a.setup));
    snprintf(t, sizeof(t), "%llu/%llu (%llu/%llu)", u(a.truth.one_to_one), u(a.truth.left), u(a.truth.left_unmatched),
             u(a.truth.left_multi));
    snprintf(j, sizeof(j), "%llu/%llu (%llu/%llu)", u(a.join.one_to_one), u(a.join.left), u(a.join.left_unmatched),
             u(a.join.left_multi));
    snprintf(jr, sizeof(jr), "%llu/%llu", u(a.join.right_unmatched), u(a.join.right_multi));
    snprintf(in, sizeof(in), "%llu/%zu", u(a.inside_1ms), a.truth.pairs.size());
    fprintf(out, "%-17s %5llu %5s %5llu  %-18s %-18s %-11s %9s %5llu\n", name.c_str(), u(a.truth.left), ia,
            u(a.join.right), t, j, jr, in, u(a.lost));
  }
  fprintf(out,
          "\nsent: client requests; ia: the kernel's server interactions, N(Ms): M of them a connection's\n"
          "set-up exchange the client logged (PostgreSQL's startup); join: the join's requests.\n"
          "truth 1:1: client requests matched by exactly one interaction that matches no other request\n"
          "(m: matching no interaction, x: several); join 1:1: interactions matched by exactly one join\n"
          "request that matches no other interaction (m: none, x: several); join (e/x): join requests\n"
          "matching no interaction / several. A match: same connection, at least half of the shorter\n"
          "interval in common. in 1 ms: 1:1 interactions inside the client's send..receive interval\n"
          "within 1 ms; lost: interactions the kernel could not record (ring or table full).\n");
}

}  // namespace jackdaw::validate
