// The real-server validation suite (`jackdaw reproduce --real`): Debian's
// packaged servers of several shapes (real_servers.h), driven by our own clients that record
// ground truth, recorded as a user would — `jackdaw record --pid SERVER`
// started after the server is up (so its workers already exist) — and
// scored like the Magpie runs (AnalyzeRun with shared-connection matching).
//
// Each run: a private server (RealServer) in work_dir/NAME_rN/, memcached
// values stored before recording starts, the recorder attached and
// confirmed, the clients run to completion, the recorder stopped with
// SIGINT, the server stopped. Nothing outside work_dir is written.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "validate/experiment.h"
#include "validate/real_servers.h"

namespace jackdaw::validate {

struct RealWorkload {
  std::string name;  // "nginx-keepalive"
  ServerKind server = ServerKind::kNginx;
  bool keep_alive = true;
  int clients = 4;
  int requests = 300;
  int tls = 0;  // the clients speak TLS 1.2 (12) or 1.3 (13) to a kNginxTls server
};

// nginx (connection per request, keep-alive; plain, TLS 1.3 and TLS 1.2;
// a reverse proxy in front of jackdaw-testserver, two processes),
// memcached (persistent),
// apache2-prefork (connection per request, keep-alive), postgres, redis
// (persistent), lighttpd (connection per request, keep-alive), mariadb
// (a thread per persistent connection), unbound (DNS over UDP), the LEMP
// stack (nginx, php-fpm, MariaDB, redis; a connection per request).
std::vector<RealWorkload> RealWorkloads(int requests);

// The workloads named in `only` (exact names); an unknown name is an error
// listing the known ones.
StatusOr<std::vector<RealWorkload>> SelectRealWorkloads(const std::vector<RealWorkload>& all,
                                                        const std::vector<std::string>& only);

struct RealRunOptions {
  std::string bin_dir;   // where `jackdaw` is
  std::string work_dir;  // per-run server directories, traces, ground truth
  uint32_t seed = 1;
  bool verbose = false;
  std::vector<std::string> record_args;  // more `jackdaw record` options (--sample 0.25)
};

// Makes `work_dir` ready for a --real run, whatever ran in it before. The
// traces are written in it as root, so it is checked as Table 1's run checks
// it (ours or root's, writable by nobody else; created if missing); and each
// server's own user (nobody, www-data, postgres, mysql) must reach its
// directory inside, so it is opened to passing through (0711: not listed,
// not written), which Table 1's 0700 was not. A directory above it that
// other users cannot pass through cannot be fixed here: refused, naming it.
Status PrepareRealWorkDir(const std::string& work_dir);

// Records one run; `repeat` numbers repeated runs of one workload (their
// files do not collide).
StatusOr<RecordedRun> RecordRealWorkload(const RealRunOptions& o, const RealWorkload& w, int repeat = 0);

// The files RecordRealWorkload() writes for (w, repeat), kept by
// --keep-traces: analysed again without recording (--reanalyze). Fails
// naming the missing file.
StatusOr<RecordedRun> KeptRealRun(const RealRunOptions& o, const RealWorkload& w, int repeat = 0);

// One table: per run and schema, exact/merged/split/extra, purity, ARI,
// accounted CPU, clusters.
void PrintRealTable(const std::vector<std::pair<RecordedRun, std::vector<SchemaResult>>>& rows, FILE* out);

}  // namespace jackdaw::validate
