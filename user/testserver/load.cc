#include "testserver/load.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "testserver/http.h"
#include "testserver/spin.h"

namespace jackdaw::testserver {
namespace {

constexpr char kMixFormat[] =
    "expected TYPE:WEIGHT[,TYPE:WEIGHT...] with TYPE in A-H and WEIGHT > 0";

Status BadMix(std::string_view part, const char* why = nullptr) {
  std::string p(part);
  if (why) return ErrStatus("bad --mix '%s': %s; %s", p.c_str(), why, kMixFormat);
  return ErrStatus("bad --mix '%s': %s", p.c_str(), kMixFormat);
}

void SleepUntilMono(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// One client thread's connection, reused across requests with keep-alive.
class ClientConn {
 public:
  ~ClientConn() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    buf_.clear();
  }
  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  uint16_t local_port() const { return local_port_; }
  std::string& buf() { return buf_; }

  // Errors: "refused" is told apart so the run can stop at once.
  Status Connect(const sockaddr_in& addr, int timeout_ms, bool* refused) {
    Close();
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return ErrStatus("socket: %s", strerror(errno));
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));  // bounds connect() too
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int rc;
    do {
      rc = connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      int err = errno;
      *refused = err == ECONNREFUSED;
      Close();
      return ErrStatus("connect: %s", strerror(err));
    }
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
    local_port_ = ntohs(local.sin_port);
    return Status::Ok();
  }

 private:
  int fd_ = -1;
  uint16_t local_port_ = 0;
  std::string buf_;
};

uint64_t ParseU64(const std::string& s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

StatusOr<std::vector<MixEntry>> ParseMix(std::string_view spec) {
  std::vector<MixEntry> mix;
  if (spec.empty()) return BadMix(spec);
  std::string_view rest = spec;
  for (;;) {
    size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    if (part.empty()) return BadMix(spec, "empty entry");
    char letter = static_cast<char>(std::toupper(static_cast<unsigned char>(part[0])));
    const RequestType* type = TypeByLetter(letter);
    double weight = 1.0;
    if (!type) return BadMix(part);
    if (part.size() > 1) {
      if (part[1] != ':' || part.size() == 2) return BadMix(part);
      std::string w(part.substr(2));
      char* end = nullptr;
      errno = 0;
      weight = strtod(w.c_str(), &end);
      if (errno != 0 || end != w.c_str() + w.size() || !std::isfinite(weight) || !(weight > 0))
        return BadMix(part);
    }
    for (const MixEntry& e : mix)
      if (e.type == type) return BadMix(part, "type given twice");
    mix.push_back({type, weight});
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  double sum = 0;
  for (const MixEntry& e : mix) sum += e.weight;
  for (MixEntry& e : mix) e.weight /= sum;
  return mix;
}

std::string FormatMix(const std::vector<MixEntry>& mix) {
  std::string out;
  for (const MixEntry& e : mix) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%s%c:%.3f", out.empty() ? "" : ",", e.type->letter, e.weight);
    out += buf;
  }
  return out;
}

std::vector<const RequestType*> GenerateSequence(const std::vector<MixEntry>& mix, size_t n,
                                                 uint64_t seed) {
  JDW_CHECK(!mix.empty());
  // mt19937_64's output is fixed by the standard; the distribution below is
  // ours (std::discrete_distribution's is implementation-defined).
  std::mt19937_64 rng(seed);
  std::vector<const RequestType*> seq;
  seq.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const RequestType* pick = mix.back().type;
    double acc = 0;
    for (const MixEntry& e : mix) {
      acc += e.weight;
      if (u < acc) {
        pick = e.type;
        break;
      }
    }
    seq.push_back(pick);
  }
  return seq;
}

StatusOr<Target> ParseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  auto bad = [&](const char* why) {
    std::string u(url);
    return ErrStatus("bad --url '%s': %s; expected http://HOST:PORT, e.g. http://127.0.0.1:8080",
                     u.c_str(), why);
  };
  if (url.substr(0, kScheme.size()) != kScheme) return bad("only http:// is supported");
  std::string_view hostport = url.substr(kScheme.size());
  while (!hostport.empty() && hostport.back() == '/') hostport.remove_suffix(1);
  if (hostport.find('/') != std::string_view::npos)
    return bad("give the server only, the driver adds the paths");
  Target t;
  size_t colon = hostport.rfind(':');
  t.host = std::string(hostport.substr(0, colon));
  t.port = 80;
  if (colon != std::string_view::npos) {
    std::string_view p = hostport.substr(colon + 1);
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || v == 0 || v > 65535)
      return bad("bad port");
    t.port = static_cast<uint16_t>(v);
  }
  if (t.host.empty()) return bad("no host");
  ASSIGN_OR_RETURN(t.addr, ResolveIpv4(t.host, t.port));
  t.base = "http://" + t.host + ":" + std::to_string(t.port);
  return t;
}

StatusOr<LoadResult> RunLoad(const LoadOptions& opts) {
  JDW_CHECK(opts.clients > 0 && !opts.mix.empty());
  const std::vector<const RequestType*> sequence =
      GenerateSequence(opts.mix, opts.requests, opts.seed);
  LoadResult result;
  result.records.resize(opts.requests);
  std::atomic<size_t> next{0};
  std::atomic<bool> abort{false};
  std::mutex fatal_mu;
  std::string fatal;

  result.start_mono_ns = MonotonicNs();
  const uint64_t start = result.start_mono_ns;
  auto client_main = [&](int client) {
    ClientConn conn;
    for (;;) {
      size_t seq = next.fetch_add(1);
      if (seq >= opts.requests || abort.load()) return;
      const RequestType& type = *sequence[seq];
      RequestRecord& r = result.records[seq];
      r.seq = seq;
      r.type = type.letter;
      r.url = opts.target.base + std::string(type.path);
      r.client = client;
      if (opts.rate > 0) {
        r.sched_mono_ns = start + static_cast<uint64_t>(static_cast<double>(seq) * 1e9 / opts.rate);
        SleepUntilMono(r.sched_mono_ns);
      }
      const std::string request = "GET " + std::string(type.path) + " HTTP/1.1\r\nHost: " +
                                  opts.target.host + ":" + std::to_string(opts.target.port) +
                                  "\r\nUser-Agent: jackdaw-load\r\nConnection: " +
                                  (opts.keepalive ? "keep-alive" : "close") + "\r\n\r\n";
      r.send_mono_ns = MonotonicNs();
      r.send_wall_ns = WallNs();
      // A kept-alive connection the server has closed meanwhile fails before
      // any response byte: retry once on a fresh one.
      for (int attempt = 0; attempt < 2; ++attempt) {
        bool reused = conn.open();
        Status st;
        if (!reused) {
          bool refused = false;
          st = conn.Connect(opts.target.addr, opts.timeout_ms, &refused);
          if (refused) {
            r.error = "connection refused";
            std::lock_guard<std::mutex> lock(fatal_mu);
            if (fatal.empty())
              fatal = "cannot connect to " + opts.target.host + ":" +
                      std::to_string(opts.target.port) +
                      ": connection refused (is jackdaw-testserver running there? it prints "
                      "\"listening on ADDR:PORT\" once ready)";
            abort = true;
            return;
          }
        }
        if (st.ok()) {
          r.local_port = conn.local_port();
          st = WriteAll(conn.fd(), request);
        }
        StatusOr<HttpResponse> resp =
            st.ok() ? ReadResponse(conn.fd(), conn.buf(), opts.timeout_ms) : StatusOr<HttpResponse>(st);
        if (!resp.ok()) {
          conn.Close();
          if (reused) continue;
          r.error = resp.status().message();
          break;
        }
        r.error.clear();
        r.status = resp->status;
        r.bytes = resp->body.size();
        r.wire_bytes = resp->wire_bytes;
        r.req_id = ParseU64(resp->Header(kHeaderRequestId));
        r.server_cpu_ns = ParseU64(resp->Header(kHeaderSpinCpuNs));
        if (r.status != 200) r.error = "HTTP " + std::to_string(r.status);
        if (!opts.keepalive || !resp->keepalive) conn.Close();
        break;
      }
      r.recv_mono_ns = MonotonicNs();
      r.recv_wall_ns = WallNs();
      r.latency_ns = r.recv_mono_ns - r.send_mono_ns;
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < opts.clients; ++c) clients.emplace_back(client_main, c);
  for (std::thread& t : clients) t.join();
  result.end_mono_ns = MonotonicNs();
  if (abort) {
    bool answered = false;
    for (const RequestRecord& r : result.records) answered |= r.status != 0;
    if (!answered) return Status::Error(fatal);
    // Requests never begun (their clients saw the abort first) are dropped.
    std::erase_if(result.records, [](const RequestRecord& r) { return r.url.empty(); });
    result.fatal = fatal;
  }
  return result;
}

std::string CsvHeader() {
  return "seq,type,url,client,local_port,sched_mono_ns,send_mono_ns,recv_mono_ns,send_wall_ns,"
         "recv_wall_ns,latency_ns,status,bytes,wire_bytes,req_id,server_cpu_ns,error\n";
}

std::string FormatRecord(const RequestRecord& r, TruthFormat format) {
  if (format == TruthFormat::kCsv) {
    // Errors are free text: quote, doubling quotes (RFC 4180).
    std::string err = "\"";
    for (char c : r.error) err += c == '"' ? std::string("\"\"") : std::string(1, c);
    err += '"';
    char buf[512];
    snprintf(buf, sizeof(buf), "%llu,%c,%s,%d,%u,%llu,%llu,%llu,%llu,%llu,%llu,%d,%llu,%llu,%llu,%llu,",
             static_cast<unsigned long long>(r.seq), r.type, r.url.c_str(), r.client, r.local_port,
             static_cast<unsigned long long>(r.sched_mono_ns),
             static_cast<unsigned long long>(r.send_mono_ns),
             static_cast<unsigned long long>(r.recv_mono_ns),
             static_cast<unsigned long long>(r.send_wall_ns),
             static_cast<unsigned long long>(r.recv_wall_ns),
             static_cast<unsigned long long>(r.latency_ns), r.status,
             static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.wire_bytes),
             static_cast<unsigned long long>(r.req_id),
             static_cast<unsigned long long>(r.server_cpu_ns));
    return buf + err + "\n";
  }
  nlohmann::ordered_json j;
  j["seq"] = r.seq;
  j["type"] = std::string(1, r.type);
  j["url"] = r.url;
  j["client"] = r.client;
  j["local_port"] = r.local_port;
  j["sched_mono_ns"] = r.sched_mono_ns;
  j["send_mono_ns"] = r.send_mono_ns;
  j["recv_mono_ns"] = r.recv_mono_ns;
  j["send_wall_ns"] = r.send_wall_ns;
  j["recv_wall_ns"] = r.recv_wall_ns;
  j["latency_ns"] = r.latency_ns;
  j["status"] = r.status;
  j["bytes"] = r.bytes;
  j["wire_bytes"] = r.wire_bytes;
  j["req_id"] = r.req_id;
  j["server_cpu_ns"] = r.server_cpu_ns;
  j["error"] = r.error;
  // replace: a stray non-UTF-8 byte (from --url) must not throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Status WriteGroundTruth(const std::string& path, TruthFormat format,
                        const std::vector<RequestRecord>& records) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return ErrStatus("cannot write --ground-truth %s: %s", path.c_str(), strerror(errno));
  if (format == TruthFormat::kCsv) out << CsvHeader();
  for (const RequestRecord& r : records) out << FormatRecord(r, format);
  out.flush();
  if (!out) return ErrStatus("cannot write --ground-truth %s: %s", path.c_str(), strerror(errno));
  return Status::Ok();
}

std::string FormatSummary(const LoadResult& result) {
  struct Row {
    std::string name;
    std::vector<uint64_t> lat;
    size_t count = 0;
    size_t errors = 0;
  };
  std::vector<Row> rows(kNumRequestTypes + 1);
  for (size_t i = 0; i < kNumRequestTypes; ++i)
    rows[i].name = std::string(1, kRequestTypes[i].letter) + " " + std::string(kRequestTypes[i].path);
  rows.back().name = "all";
  for (const RequestRecord& r : result.records) {
    for (Row* row : {&rows[TypeIndex(TypeByLetter(r.type))], &rows.back()}) {
      row->count++;
      if (!r.ok()) row->errors++;
      else row->lat.push_back(r.latency_ns);
    }
  }
  const RequestRecord* first_error = nullptr;
  for (const RequestRecord& r : result.records)
    if (!r.ok() && !first_error) first_error = &r;
  double secs = static_cast<double>(result.end_mono_ns - result.start_mono_ns) / 1e9;
  std::string out;
  char buf[256];
  snprintf(buf, sizeof(buf), "requests: %zu  errors: %zu  elapsed: %.3f s  throughput: %.1f req/s\n",
           rows.back().count, rows.back().errors, secs,
           secs > 0 ? static_cast<double>(rows.back().count) / secs : 0.0);
  out += buf;
  snprintf(buf, sizeof(buf), "%-14s %8s %7s %10s %10s %10s\n", "type", "requests", "errors",
           "mean ms", "p50 ms", "p99 ms");
  out += buf;
  for (Row& row : rows) {
    if (row.count == 0) continue;
    std::sort(row.lat.begin(), row.lat.end());
    auto pct = [&](double p) -> double {  // nearest rank
      if (row.lat.empty()) return 0;
      size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(row.lat.size())));
      return static_cast<double>(row.lat[std::clamp<size_t>(rank, 1, row.lat.size()) - 1]) / 1e6;
    };
    double mean = 0;
    for (uint64_t l : row.lat) mean += static_cast<double>(l);
    mean = row.lat.empty() ? 0 : mean / static_cast<double>(row.lat.size()) / 1e6;
    snprintf(buf, sizeof(buf), "%-14s %8zu %7zu %10.3f %10.3f %10.3f\n", row.name.c_str(),
             row.count, row.errors, mean, pct(0.5), pct(0.99));
    out += buf;
  }
  if (first_error) {
    snprintf(buf, sizeof(buf), "first error: seq %llu %s: %s\n",
             static_cast<unsigned long long>(first_error->seq), first_error->url.c_str(),
             first_error->error.c_str());
    out += buf;
  }
  return out;
}

}  // namespace jackdaw::testserver
