#include "private_clickhouse.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "export/http/http_post.h"
#include "export/http/test_receiver.h"

extern char** environ;

namespace jackdaw::testing {
namespace {

}  // namespace

std::string ClickHouseBinary() {
  for (const char* p : {"/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server", "/usr/bin/clickhouse"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

PrivateClickHouse::~PrivateClickHouse() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
  }
  if (!dir_.empty()) (void)!system(("rm -rf " + dir_).c_str());
}

void PrivateClickHouse::ChoosePorts() {
  if (http_port_) return;
  http_port_ = http::UnusedLoopbackPort();
  do tcp_port_ = http::UnusedLoopbackPort();
  while (tcp_port_ == http_port_);
}

Status PrivateClickHouse::Start(const std::string& remote_servers) {
  const std::string bin = ClickHouseBinary();
  if (bin.empty()) return ErrStatus("clickhouse-server is not installed: run scripts/install-deps.sh");
  ChoosePorts();
  char tmpl[] = "/tmp/jdw-clickhouse-XXXXXX";
  if (!mkdtemp(tmpl)) return ErrStatus("mkdtemp failed");
  dir_ = tmpl;
  std::ofstream(dir_ + "/config.xml")
      << "<yandex>\n"
         "  <logger><level>warning</level><log>" << dir_ << "/server.log</log><errorlog>" << dir_
      << "/error.log</errorlog><console>0</console></logger>\n"
         "  <listen_host>127.0.0.1</listen_host>\n"
         "  <http_port>" << http_port_ << "</http_port>\n"
         "  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
         "  <path>" << dir_ << "/data/</path>\n"
         "  <tmp_path>" << dir_ << "/tmp/</tmp_path>\n"
         "  <user_files_path>" << dir_ << "/user_files/</user_files_path>\n"
         "  <format_schema_path>" << dir_ << "/format_schemas/</format_schema_path>\n"
         "  <users_config>users.xml</users_config>\n"
         "  <default_profile>default</default_profile>\n"
         "  <default_database>default</default_database>\n"
         "  <mark_cache_size>67108864</mark_cache_size>\n"
         "  <remote_servers>" << remote_servers << "</remote_servers>\n"
         "</yandex>\n";
  std::ofstream(dir_ + "/users.xml")
      << "<yandex>\n"
         "  <profiles><default></default></profiles>\n"
         "  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>"
         "<profile>default</profile><quota>default</quota></default></users>\n"
         "  <quotas><default></default></quotas>\n"
         "</yandex>\n";
  std::vector<std::string> argv = {bin};
  if (bin == "/usr/bin/clickhouse") argv.push_back("server");
  argv.push_back("--config-file=" + dir_ + "/config.xml");
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string out = dir_ + "/stdout";
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&fa, dir_.c_str());
  const int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return pid_ = -1, ErrStatus("posix_spawn %s failed", bin.c_str());
  for (int i = 0; i < 600; ++i) {
    auto r = Query("SELECT 1");
    if (r.ok() && *r == "1\n") return Status::Ok();
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream err(dir_ + "/error.log");
      std::string line, last;
      while (std::getline(err, line)) last = line;
      return ErrStatus("clickhouse-server exited at start: %s", last.c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ErrStatus("clickhouse-server did not answer on port %u within 60 s", http_port_);
}

void PrivateClickHouse::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

StatusOr<std::string> PrivateClickHouse::Query(const std::string& sql) const {
  http::PostOptions o;
  o.content_type = "text/plain";
  o.timeout_ms = 30000;
  o.max_body = 1 << 24;
  const http::HttpResult r = http::Post(http::HttpUrl{"127.0.0.1", http_port_, "/"}, sql, o);
  if (r.status == 200) return r.body;
  return ErrStatus("%s: %s", sql.c_str(), r.status ? http::FirstLine(r.body).c_str() : r.error.c_str());
}

uint64_t PrivateClickHouse::Number(const std::string& sql) const {
  auto r = Query(sql);
  return r.ok() ? std::strtoull(r->c_str(), nullptr, 10) : ~uint64_t{0};
}

}  // namespace jackdaw::testing
