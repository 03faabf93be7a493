#include "validate/real_suite.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/clock.h"
#include "common/safe_file.h"
#include "validate/jackdaw_child.h"
#include "validate/real_interactions.h"

namespace jackdaw::validate {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `jackdaw record --pid P`, its stderr to a file; returns once it says it
// is recording (the probes are attached and the filter holds P's tree).
StatusOr<pid_t> StartRecorder(const RealRunOptions& o, const std::vector<pid_t>& servers, const std::string& trace,
                              const std::string& log) {
  std::vector<std::string> argv = {o.bin_dir + "/jackdaw", "record"};
  for (pid_t p : servers) argv.insert(argv.end(), {"--pid", std::to_string(p)});
  argv.insert(argv.end(), {"-o", trace});
  argv.insert(argv.end(), o.record_args.begin(), o.record_args.end());
  return StartJackdawChild(argv, log, "jackdaw: recording");
}

}  // namespace

std::vector<RealWorkload> RealWorkloads(int requests) {
  return {
      {"nginx-close", ServerKind::kNginx, false, 4, requests},
      {"nginx-keepalive", ServerKind::kNginx, true, 4, requests},
      {"nginx-proxy", ServerKind::kNginxProxy, true, 4, requests},
      {"nginx-tls13-keepalive", ServerKind::kNginxTls, true, 4, requests, 13},
      {"nginx-tls13-close", ServerKind::kNginxTls, false, 4, requests, 13},
      {"nginx-tls12-keepalive", ServerKind::kNginxTls, true, 4, requests, 12},
      {"nginx-tls12-close", ServerKind::kNginxTls, false, 4, requests, 12},
      {"memcached", ServerKind::kMemcached, true, 4, requests},
      {"apache-close", ServerKind::kApachePrefork, false, 4, requests},
      {"apache-keepalive", ServerKind::kApachePrefork, true, 4, requests},
      {"postgres", ServerKind::kPostgres, true, 4, requests},
      {"redis", ServerKind::kRedis, true, 4, requests},
      {"lighttpd-close", ServerKind::kLighttpd, false, 4, requests},
      {"lighttpd-keepalive", ServerKind::kLighttpd, true, 4, requests},
      {"mariadb", ServerKind::kMariadb, true, 4, requests},
      {"lemp", ServerKind::kLemp, false, 4, requests},
      {"caddy-close", ServerKind::kCaddy, false, 4, requests},
      {"caddy-keepalive", ServerKind::kCaddy, true, 4, requests},
      {"jdk-pool", ServerKind::kJdkPool, true, 4, requests},
      {"unbound-udp", ServerKind::kUnbound, true, 5, requests},
  };
}

StatusOr<std::vector<RealWorkload>> SelectRealWorkloads(const std::vector<RealWorkload>& all,
                                                        const std::vector<std::string>& only) {
  std::vector<RealWorkload> out;
  for (const RealWorkload& w : all) {
    for (const auto& n : only)
      if (n == w.name) out.push_back(w);
  }
  for (const auto& n : only) {
    bool found = false;
    for (const RealWorkload& w : all) found |= w.name == n;
    if (found) continue;
    std::string known;
    for (const RealWorkload& w : all) known += (known.empty() ? "" : ", ") + w.name;
    return ErrStatus("--only %s: no such real-server workload (known: %s)", n.c_str(), known.c_str());
  }
  return out;
}

Status PrepareRealWorkDir(const std::string& work_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(work_dir, ec).lexically_normal();
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  RETURN_IF_ERROR(CheckPrivateDir(work_dir, 0711));
  struct stat st;
  if (stat(work_dir.c_str(), &st) != 0) return ErrStatus("cannot stat %s: %s", work_dir.c_str(), strerror(errno));
  if ((st.st_mode & 0111) != 0111 && chmod(work_dir.c_str(), (st.st_mode & 07777) | 0111) != 0)
    return ErrStatus("cannot open %s to the servers' users: %s", work_dir.c_str(), strerror(errno));
  for (fs::path above = dir.parent_path(); !above.empty(); above = above.parent_path()) {
    if (stat(above.c_str(), &st) != 0) return ErrStatus("cannot stat %s: %s", above.c_str(), strerror(errno));
    if (!(st.st_mode & S_IXOTH))
      return ErrStatus("%s is closed to other users (mode %03o), so the servers' users cannot reach %s: pass a "
                       "--work-dir under /var/tmp",
                       above.c_str(), static_cast<unsigned>(st.st_mode & 0777), work_dir.c_str());
    if (above == above.root_path()) break;
  }
  return Status::Ok();
}

StatusOr<RecordedRun> KeptRealRun(const RealRunOptions& o, const RealWorkload& w, int repeat) {
  const std::string stem = o.work_dir + "/" + w.name + "_r" + std::to_string(repeat);
  RecordedRun run;
  run.workload = Workload{"real", w.name, ServerName(w.server), w.clients, w.requests};
  run.trace = stem + ".jdw";
  run.truth = stem + ".truth.jsonl";
  run.shared_connections = w.keep_alive;
  for (const std::string& f : {run.trace, run.truth})
    if (access(f.c_str(), R_OK) != 0)
      return ErrStatus("--reanalyze: %s: %s (record it first with --keep-traces and the same --work-dir)", f.c_str(),
                       strerror(errno));
  return run;
}

StatusOr<RecordedRun> RecordRealWorkload(const RealRunOptions& o, const RealWorkload& w, int repeat) {
  const std::string stem = o.work_dir + "/" + w.name + "_r" + std::to_string(repeat);
  std::error_code ec;
  std::filesystem::remove_all(stem + ".server", ec);
  RecordedRun run;
  run.workload = Workload{"real", w.name, ServerName(w.server), w.clients, w.requests};
  run.trace = stem + ".jdw";
  run.truth = stem + ".truth.jsonl";
  run.shared_connections = w.keep_alive;
  const uint64_t t0 = MonotonicNs();
  ASSIGN_OR_RETURN(auto server, RealServer::Start(w.server, stem + ".server", o.bin_dir));
  ClientOptions c;
  c.protocol = w.server == ServerKind::kMemcached  ? Protocol::kMemcache
               : w.server == ServerKind::kPostgres ? Protocol::kPostgres
               : w.server == ServerKind::kRedis    ? Protocol::kRedis
               : w.server == ServerKind::kMariadb  ? Protocol::kMysql
               : w.server == ServerKind::kUnbound  ? Protocol::kDns
                                                   : Protocol::kHttp;
  c.port = server->port();
  c.kinds = ServerRequestKinds(w.server);
  c.clients = w.clients;
  c.requests = w.requests;
  c.keep_alive = w.keep_alive;
  c.seed = o.seed + uint32_t(repeat);
  c.tls = w.tls;
  c.truth_path = run.truth;
  if (c.protocol == Protocol::kMemcache || c.protocol == Protocol::kRedis)
    RETURN_IF_ERROR(PrepareKeyValue(c.protocol, c.port, c.kinds));
  if (c.protocol == Protocol::kPostgres) {
    // The postmaster accepts connections before recovery is over and
    // refuses them until then ("the database system is starting up"; seen
    // on a loaded machine): retry that, and only that, for up to 30 s.
    Status prepared = PreparePostgres(c.port);
    for (int i = 0; i < 300 && !prepared.ok() && prepared.message().find("starting up") != std::string::npos; ++i) {
      usleep(100 * 1000);
      prepared = PreparePostgres(c.port);
    }
    RETURN_IF_ERROR(prepared);
  }
  if (c.protocol == Protocol::kMysql) RETURN_IF_ERROR(PrepareMysql(c.port, MariadbSetupStatements()));
  ASSIGN_OR_RETURN(pid_t recorder, StartRecorder(o, server->pids(), run.trace, stem + ".record.log"));
  // The kernel's interactions beside it (real_interactions.h); a failure
  // there is reported when they are compared, the run goes on.
  auto interactions = StartInteractionRecorder(o.bin_dir, server->pid(), run.trace);
  Status clients = RunClients(c);
  kill(recorder, SIGINT);
  const int rec_rc = WaitExit(recorder);
  Status stopped = server->Stop();
  // After the server: its close of idle keep-alive connections completes
  // their last interactions.
  if (interactions.ok() && !StopInteractionRecorder(*interactions, run.trace).ok())
    std::filesystem::remove(InteractionsPathFor(run.trace), ec);
  run.wall_s = double(MonotonicNs() - t0) / 1e9;
  if (!clients.ok())
    return ErrStatus("%s: client failed: %s", w.name.c_str(), clients.message().c_str());
  if (rec_rc != 0)
    return ErrStatus("%s: jackdaw record failed (exit %d): %s", w.name.c_str(), rec_rc,
                     ReadAll(stem + ".record.log").c_str());
  RETURN_IF_ERROR(stopped);
  if (!o.verbose) std::filesystem::remove_all(stem + ".server", ec);
  return run;
}

void PrintRealTable(const std::vector<std::pair<RecordedRun, std::vector<SchemaResult>>>& rows, FILE* out) {
  fprintf(out, "\nReal servers (Debian packages, loopback, recorded with jackdaw record --pid)\n");
  fprintf(out, "%-17s %-15s %9s %6s %5s %5s %6s %5s %7s %6s %7s %7s %5s  %s\n", "workload", "schema", "exact",
          "merged", "split", "extra", "acct%", "conn%", "cpu10%", "purity", "ARI", "clusters", "out%",
          "clusters (size: make-up)");
  for (const auto& [run, results] : rows) {
    for (const auto& r : results) {
      std::string cl;
      for (const auto& c : r.clusters) {
        if (!cl.empty()) cl += ", ";
        cl += c.composition.empty() ? std::to_string(c.size) : c.composition;
        if (cl.size() > 60) {
          cl += ", ...";
          break;
        }
      }
      char ex[32];
      snprintf(ex, sizeof(ex), "%llu/%llu", static_cast<unsigned long long>(r.exact),
               static_cast<unsigned long long>(r.sent));
      char extra[32];
      snprintf(extra, sizeof(extra), r.setup ? "%llu(%llus)" : "%llu", static_cast<unsigned long long>(r.unmatched),
               static_cast<unsigned long long>(r.setup));
      char measured[32] = "-";
      if (r.measured_cpu)
        snprintf(measured, sizeof(measured), "%llu/%llu", static_cast<unsigned long long>(r.measured_cpu_within_10pct),
                 static_cast<unsigned long long>(r.measured_cpu));
      fprintf(out, "%-17s %-15s %9s %6llu %5llu %5s %6.1f %5.1f %7s %6.3f %7.3f %7zu %4.1f%%  %s\n",
              run.workload.name.c_str(), r.schema.c_str(), ex, static_cast<unsigned long long>(r.merged),
              static_cast<unsigned long long>(r.split), extra, 100 * r.accounted_cpu, 100 * r.connection_cpu, measured,
              r.purity, r.ari, r.clusters.size(), 100 * r.outside_type_cluster, cl.c_str());
    }
  }
  fprintf(out,
          "\nexact: client requests matched by exactly one extracted request that matches nothing else / sent;\n"
          "merged: extracted requests holding several client requests; split: client requests over several\n"
          "extracted ones (on persistent connections a request is matched by its exchange, up to the next\n"
          "exchange's start, though its own work may go on past it: `overhang` in --results); extra: extracted requests matching no client request (connection set-up or\n"
          "teardown, idle reads), N(Ms): M of them a set-up exchange the client logged (PostgreSQL's\n"
          "startup); acct%%: CPU charged to requests or to their connections' life / on-CPU\n"
          "time of the server's threads; conn%%: the part charged to connection life (accept, idle and\n"
          "end-of-file reads, close: not requests); cpu10%%: requests whose server measured its own CPU\n"
          "for them (jackdaw-testserver's spins) and of them those charging their innermost tier (the\n"
          "backend behind a proxy) within 10 %% of it, as within/measured.\n");
}

}  // namespace jackdaw::validate
