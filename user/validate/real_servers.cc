#include "validate/real_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "validate/real_jdk.h"
#include "validate/real_lemp.h"
#include "validate/real_postgres.h"
#include "validate/tls.h"

namespace jackdaw::validate {
namespace {

namespace fs = std::filesystem;

// Static files: Magpie's C (12 KB) and D (5 KB) and a large one.
struct StaticFile {
  const char* kind;
  const char* name;
  size_t bytes;
};
// Kind names start with a letter: cluster make-ups print as "25small12K".
constexpr StaticFile kFiles[] = {{"tiny5K", "5k.html", 5 * 1024}, {"small12K", "12k.html", 12 * 1024},
                                 {"big256K", "256k.html", 256 * 1024}};

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) return ErrStatus("cannot write %s", path.c_str());
  return Status::Ok();
}

// Workers run as nobody: the tree they read must be world-readable.
Status MakeDocroot(const std::string& dir) {
  const std::string www = dir + "/www";
  std::error_code ec;
  fs::create_directories(www, ec);
  if (ec) return ErrStatus("cannot create %s: %s", www.c_str(), ec.message().c_str());
  for (const auto& f : kFiles) {
    std::string body(f.bytes, 'x');
    for (size_t i = 0; i < body.size(); i += 64) body[i] = '\n';
    RETURN_IF_ERROR(WriteFile(www + "/" + f.name, body));
  }
  chmod(dir.c_str(), 0755);
  chmod(www.c_str(), 0755);
  return Status::Ok();
}

// A reverse proxy to jackdaw-testserver on upstream_port, its upstream
// connections pooled (HTTP/1.1 with the Connection header cleared, as
// nginx's documentation says keepalive needs).
std::string ProxyUpstream(uint16_t upstream_port) {
  return "  upstream jdw_app {\n"
         "    server 127.0.0.1:" + std::to_string(upstream_port) + ";\n"
         "    keepalive 8;\n"
         "  }\n";
}
constexpr const char* kProxyLocation =
    "    location / {\n"
    "      proxy_pass http://jdw_app;\n"
    "      proxy_http_version 1.1;\n"
    "      proxy_set_header Connection \"\";\n"
    "    }\n";

// http_extra: blocks of the http context (an upstream); locations: the
// server block's content, a static document root by default.
std::string NginxConfig(const std::string& dir, uint16_t port, bool tls, const std::string& http_extra = "",
                        const std::string& locations = "") {
  // Debian's nginx.conf defaults where they matter to the request path
  // (sendfile, tcp_nopush, keep-alive), everything else private to dir.
  return "daemon off;\n"
         "master_process on;\n"
         "worker_processes 2;\n"
         "user nobody nogroup;\n"
         "pid " + dir + "/nginx.pid;\n"
         "error_log " + dir + "/error.log warn;\n"
         "events { worker_connections 512; }\n"
         "http {\n"
         "  sendfile on;\n"
         "  tcp_nopush on;\n"
         "  keepalive_timeout 65;\n"
         "  keepalive_requests 100000;\n"
         "  access_log off;\n"
         "  default_type text/html;\n"
         "  client_body_temp_path " + dir + "/tmp_body;\n"
         "  proxy_temp_path " + dir + "/tmp_proxy;\n"
         "  fastcgi_temp_path " + dir + "/tmp_fastcgi;\n"
         "  uwsgi_temp_path " + dir + "/tmp_uwsgi;\n"
         "  scgi_temp_path " + dir + "/tmp_scgi;\n" + http_extra +
         "  server {\n"
         "    listen 127.0.0.1:" + std::to_string(port) + (tls ? " ssl" : "") + ";\n" +
         (tls ? "    ssl_certificate " + dir + "/tls.crt;\n"
                "    ssl_certificate_key " + dir + "/tls.key;\n"
                "    ssl_protocols TLSv1.2 TLSv1.3;\n"
                // Debian's nginx.conf leaves the session cache off; a shared
                // one lets either worker resume a TLS 1.2 session by its id.
                "    ssl_session_cache shared:jdw:1m;\n"
              : "") +
         (locations.empty() ? "    root " + dir + "/www;\n    location / { }\n" : locations) +
         "  }\n"
         "}\n";
}

// unbound answering the zone jdw.test. from its local data, privately:
// no privilege drop or chroot, no syslog, no validator, no remote control;
// one UDP socket (no SO_REUSEPORT) that both threads serve. TCP stays on
// only so the suite can see it listening.
std::string UnboundConfig(const std::string& dir, uint16_t port) {
  std::string txt;
  // Two strings, 360 bytes: the answer fits a 512-byte datagram (no EDNS).
  for (int i = 0; i < 2; ++i) txt += " \"" + std::string(180, char('a' + i)) + "\"";
  return "server:\n"
         "  interface: 127.0.0.1\n"
         "  port: " + std::to_string(port) + "\n"
         "  do-ip6: no\n"
         "  do-daemonize: no\n"
         "  username: \"\"\n"
         "  chroot: \"\"\n"
         "  directory: \"" + dir + "\"\n"
         "  pidfile: \"" + dir + "/unbound.pid\"\n"
         "  use-syslog: no\n"
         "  logfile: \"\"\n"
         "  verbosity: 0\n"
         "  num-threads: 2\n"
         "  so-reuseport: no\n"
         "  access-control: 127.0.0.0/8 allow\n"
         "  module-config: \"iterator\"\n"
         "  local-zone: \"jdw.test.\" static\n"
         "  local-data: \"a.jdw.test. 3600 IN A 10.0.0.1\"\n"
         "  local-data: \"six.jdw.test. 3600 IN AAAA 2001:db8::1\"\n"
         "  local-data: 't.jdw.test. 3600 IN TXT" + txt + "'\n"
         "remote-control:\n"
         "  control-enable: no\n";
}

std::string ApacheConfig(const std::string& dir, uint16_t port) {
  const std::string mods = "/usr/lib/apache2/modules/";
  return "ServerRoot " + dir + "\n"
         "DefaultRuntimeDir " + dir + "/run\n"
         "PidFile " + dir + "/apache2.pid\n"
         "Mutex file:" + dir + "/run default\n"
         "LoadModule mpm_prefork_module " + mods + "mod_mpm_prefork.so\n"
         "LoadModule authz_core_module " + mods + "mod_authz_core.so\n"
         "ServerName localhost\n"
         "Listen 127.0.0.1:" + std::to_string(port) + "\n"
         "User nobody\n"
         "Group nogroup\n"
         "ErrorLog " + dir + "/error.log\n"
         "LogLevel warn\n"
         "DocumentRoot " + dir + "/www\n"
         "<Directory " + dir + "/www>\n"
         "  Require all granted\n"
         "</Directory>\n"
         "KeepAlive On\n"
         "MaxKeepAliveRequests 0\n"
         "KeepAliveTimeout 5\n"
         "StartServers 5\n"
         "MinSpareServers 5\n"
         "MaxSpareServers 10\n"
         "MaxRequestWorkers 32\n"
         "MaxConnectionsPerChild 0\n";
}

// lighttpd 1.4 with no modules beyond its built-in static file handler;
// Debian's defaults where they matter to the request path (sendfile via its
// network backend, keep-alive on), everything else private to dir. Its
// error log is its stderr (server.out): lighttpd opens a log file after
// dropping to nobody, which cannot write in dir.
std::string LighttpdConfig(const std::string& dir, uint16_t port) {
  return "server.document-root = \"" + dir + "/www\"\n"
         "server.bind = \"127.0.0.1\"\n"
         "server.port = " + std::to_string(port) + "\n"
         "server.username = \"nobody\"\n"
         "server.groupname = \"nogroup\"\n"
         "server.max-keep-alive-requests = 100000\n"
         "server.max-keep-alive-idle = 65\n"
         "mimetype.assign = (\".html\" => \"text/html\")\n";
}

// caddy's file server on the same document root as nginx's, with nothing
// of its own: no admin endpoint, no automatic HTTPS.
std::string CaddyConfig(const std::string& dir, uint16_t port) {
  return "{\n"
         "  admin off\n"
         "  auto_https off\n"
         "}\n"
         // Any host name (the clients send Host: localhost; a site named
         // by its address would answer other names with an empty 200).
         "http://:" + std::to_string(port) + " {\n"
         "  bind 127.0.0.1\n"
         "  root * " + dir + "/www\n"
         "  file_server\n"
         "}\n";
}

// Runs argv to completion, its output to out_fd.
Status RunToCompletion(const std::vector<std::string>& argv, int out_fd) {
  const pid_t pid = fork();
  if (pid < 0) return ErrStatus("fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return ErrStatus("%s failed", argv[0].c_str());
  return Status::Ok();
}

// mariadbd refuses to run as root: it and its files are the mysql user's
// (created by the package).
StatusOr<std::vector<std::string>> MariadbArgs(const std::string& bin, const std::string& dir, uint16_t port,
                                               int log_fd) {
  const passwd* pw = getpwnam("mysql");
  if (!pw) return ErrStatus("no user mysql: reinstall the Debian package mariadb-server");
  const std::string run = dir + "/run";
  if (chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0 || chown(run.c_str(), pw->pw_uid, pw->pw_gid) != 0)
    return ErrStatus("chown %s: %s", dir.c_str(), strerror(errno));
  RETURN_IF_ERROR(RunToCompletion({"/usr/bin/mariadb-install-db", "--no-defaults", "--datadir=" + dir + "/data",
                                   "--user=mysql", "--auth-root-authentication-method=normal", "--skip-test-db"},
                                  log_fd));
  return std::vector<std::string>{bin, "--no-defaults", "--datadir=" + dir + "/data", "--socket=" + run + "/mysqld.sock",
                                  "--pid-file=" + run + "/mariadbd.pid", "--port=" + std::to_string(port),
                                  "--bind-address=127.0.0.1", "--user=mysql", "--skip-grant-tables",
                                  "--skip-log-bin", "--innodb-buffer-pool-size=64M", "--log-error=" + run + "/error.log"};
}

bool AcceptsUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) {
    close(fd);
    return false;
  }
  memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

bool Accepts(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

std::string Tail(const std::string& path) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() > 400) s = s.substr(s.size() - 400);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

const char* ServerName(ServerKind k) {
  switch (k) {
    case ServerKind::kNginx: return "nginx";
    case ServerKind::kNginxTls: return "nginx-tls";
    case ServerKind::kNginxProxy: return "nginx-proxy";
    case ServerKind::kMemcached: return "memcached";
    case ServerKind::kApachePrefork: return "apache2-prefork";
    case ServerKind::kPostgres: return "postgres";
    case ServerKind::kRedis: return "redis";
    case ServerKind::kLighttpd: return "lighttpd";
    case ServerKind::kMariadb: return "mariadb";
    case ServerKind::kUnbound: return "unbound";
    case ServerKind::kLemp: return "lemp";
    case ServerKind::kCaddy: return "caddy";
    case ServerKind::kJdkPool: return "jdk-pool";
  }
  return "?";
}

std::string ServerBinary(ServerKind k) {
  switch (k) {
    case ServerKind::kNginx:
    case ServerKind::kNginxTls:
    case ServerKind::kNginxProxy: return "/usr/sbin/nginx";
    case ServerKind::kMemcached: return "/usr/bin/memcached";
    case ServerKind::kApachePrefork: return "/usr/sbin/apache2";
    case ServerKind::kPostgres: return PostgresBinary();
    case ServerKind::kRedis: return "/usr/bin/redis-server";
    case ServerKind::kLighttpd: return "/usr/sbin/lighttpd";
    case ServerKind::kMariadb: return "/usr/sbin/mariadbd";
    case ServerKind::kUnbound: return "/usr/sbin/unbound";
    case ServerKind::kLemp: return kPhpFpmBinary;  // nginx, MariaDB and redis are checked as their own kinds
    case ServerKind::kCaddy: return "/usr/bin/caddy";
    case ServerKind::kJdkPool: return kJavaBinary;
  }
  return "";
}

const char* ServerPackage(ServerKind k) {
  switch (k) {
    case ServerKind::kNginx:
    case ServerKind::kNginxTls:
    case ServerKind::kNginxProxy: return "nginx";
    case ServerKind::kMemcached: return "memcached";
    case ServerKind::kApachePrefork: return "apache2";
    case ServerKind::kPostgres: return "postgresql";
    case ServerKind::kRedis: return "redis-server";
    case ServerKind::kLighttpd: return "lighttpd";
    case ServerKind::kMariadb: return "mariadb-server";
    case ServerKind::kUnbound: return "unbound";
    case ServerKind::kLemp: return "php8.2-fpm php8.2-mysql php8.2-redis";
    case ServerKind::kCaddy: return "caddy";
    case ServerKind::kJdkPool: return kJavaPackage;
  }
  return "";
}

std::vector<RequestKind> ServerRequestKinds(ServerKind k) {
  std::vector<RequestKind> out;
  if (k == ServerKind::kMemcached || k == ServerKind::kRedis) {
    // The same three kinds on both key-value servers: what differs is the
    // server's shape (worker threads vs one event loop) and the protocol.
    out.push_back({"get-small", "small", "get", 100, 0});
    out.push_back({"get-100K", "big", "get", 100 * 1024, 0});
    out.push_back({"set-50K", "upload", "set", 50 * 1024, 0});
    return out;
  }
  if (k == ServerKind::kUnbound) {
    // Three answers of different sizes from the local zone and a name it
    // does not hold (NXDOMAIN, response code 3).
    out.push_back({"a", "a.jdw.test", "A", 0, 0});
    out.push_back({"aaaa", "six.jdw.test", "AAAA", 0, 0});
    out.push_back({"txt360", "t.jdw.test", "TXT", 0, 0});
    out.push_back({"nxdomain", "none.jdw.test", "A", 0, 3});
    return out;
  }
  if (k == ServerKind::kLemp) return LempRequestKinds();
  if (k == ServerKind::kJdkPool) return JdkPoolRequestKinds();
  if (k == ServerKind::kNginxProxy) {
    // Table 1's A-D as jackdaw-testserver serves them: two CPU spins (their
    // thread CPU comes back in X-Spin-Cpu-Ns, the backend's own measure)
    // and two static files.
    out.push_back({"longspin30ms", "/longspin", "get", 12, 200});
    out.push_back({"shortspin15ms", "/shortspin", "get", 13, 200});
    out.push_back({"small12K", "/small", "get", 12 * 1024, 200});
    out.push_back({"tiny5K", "/tiny", "get", 5 * 1024, 200});
    return out;
  }
  if (k == ServerKind::kMariadb) {
    // PostgreSQL's four kinds on a thread-per-connection server: a point
    // lookup, ~110 KB of rows, one row committed (InnoDB flushes its log),
    // 500 rows in one statement.
    out.push_back({"point", "SELECT v FROM jdw.kv WHERE k = 4242", "rows 1", 0, 0});
    out.push_back({"scan100K", "SELECT id, pad FROM jdw.wide ORDER BY id", "rows 1000", 100 * 1000, 0});
    out.push_back({"insert1", "INSERT INTO jdw.log (pad) VALUES (REPEAT('i', 100))", "affected 1", 0, 0});
    out.push_back({"bulk500", "INSERT INTO jdw.log (pad) SELECT REPEAT('b', 200) FROM jdw.seq_1_to_500",
                   "affected 500", 0, 0});
    return out;
  }
  if (k == ServerKind::kPostgres) {
    // Two reads (a point lookup, ~110 KB of rows) and two writes that
    // differ mainly in WAL: one row committed with its WAL flushed, and
    // 500 rows (~140 KB of WAL) in one statement. Tables: PreparePostgres().
    out.push_back({"point", "SELECT v FROM kv WHERE k = 4242", "SELECT 1", 0, 0});
    out.push_back({"scan100K", "SELECT id, pad FROM wide ORDER BY id", "SELECT 1000", 100 * 1000, 0});
    out.push_back({"insert1", "INSERT INTO log (pad) VALUES (repeat('i', 100))", "INSERT 0 1", 0, 0});
    out.push_back({"bulk500", "INSERT INTO log (pad) SELECT repeat('b', 200) FROM generate_series(1, 500)",
                   "INSERT 0 500", 0, 0});
    return out;
  }
  for (const auto& f : kFiles) out.push_back({f.kind, std::string("/") + f.name, "get", f.bytes, 200});
  out.push_back({"notfound", "/missing.html", "get", 0, 404});
  return out;
}

std::vector<std::string> MariadbSetupStatements() {
  return {"CREATE DATABASE jdw",
          "CREATE TABLE jdw.kv (k INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
          "INSERT INTO jdw.kv SELECT seq, MD5(seq) FROM jdw.seq_1_to_10000",
          "CREATE TABLE jdw.wide (id INT PRIMARY KEY, pad VARCHAR(128)) ENGINE=InnoDB",
          "INSERT INTO jdw.wide SELECT seq, REPEAT(CHAR(97 + seq % 26), 96) FROM jdw.seq_1_to_1000",
          "CREATE TABLE jdw.log (id BIGINT AUTO_INCREMENT PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
          "pad VARCHAR(255)) ENGINE=InnoDB"};
}

StatusOr<uint16_t> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrStatus("socket: %s", strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    close(fd);
    return ErrStatus("cannot find a free loopback port: %s", strerror(e));
  }
  close(fd);
  return ntohs(a.sin_port);
}

StatusOr<std::unique_ptr<RealServer>> RealServer::Start(ServerKind kind, const std::string& dir,
                                                        const std::string& bin_dir) {
  const std::string bin = ServerBinary(kind);
  if (access(bin.c_str(), X_OK) != 0)
    return ErrStatus("%s is not installed (%s missing): install the Debian package %s (scripts/install-deps.sh)",
                     ServerName(kind), bin.c_str(), ServerPackage(kind));
  std::unique_ptr<RealServer> s(new RealServer());
  s->kind_ = kind;
  s->dir_ = dir;
  std::error_code ec;
  fs::create_directories(dir + "/run", ec);
  if (ec) return ErrStatus("cannot create %s: %s", dir.c_str(), ec.message().c_str());
  ASSIGN_OR_RETURN(s->port_, FreeLoopbackPort());
  std::vector<std::string> argv;
  switch (kind) {
    case ServerKind::kNginx:
    case ServerKind::kNginxTls:
      RETURN_IF_ERROR(MakeDocroot(dir));
      if (kind == ServerKind::kNginxTls) RETURN_IF_ERROR(WriteSelfSignedCertificate(dir + "/tls.key", dir + "/tls.crt"));
      RETURN_IF_ERROR(WriteFile(dir + "/nginx.conf", NginxConfig(dir, s->port_, kind == ServerKind::kNginxTls)));
      argv = {bin, "-p", dir, "-e", dir + "/error.log", "-c", dir + "/nginx.conf"};
      break;
    case ServerKind::kLemp: {
      ASSIGN_OR_RETURN(std::string locations, s->StartLempBackends(dir));
      RETURN_IF_ERROR(WriteFile(dir + "/nginx.conf", NginxConfig(dir, s->port_, false, "", locations)));
      argv = {"/usr/sbin/nginx", "-p", dir, "-e", dir + "/error.log", "-c", dir + "/nginx.conf"};
      break;
    }
    case ServerKind::kNginxProxy: {
      ASSIGN_OR_RETURN(auto backend, StartTestserverBackend(bin_dir, dir + "/backend"));
      RETURN_IF_ERROR(
          WriteFile(dir + "/nginx.conf", NginxConfig(dir, s->port_, false, ProxyUpstream(backend->port()), kProxyLocation)));
      s->backends_.push_back(std::move(backend));
      argv = {bin, "-p", dir, "-e", dir + "/error.log", "-c", dir + "/nginx.conf"};
      break;
    }
    case ServerKind::kApachePrefork:
      RETURN_IF_ERROR(MakeDocroot(dir));
      RETURN_IF_ERROR(WriteFile(dir + "/apache2.conf", ApacheConfig(dir, s->port_)));
      argv = {bin, "-f", dir + "/apache2.conf", "-DFOREGROUND"};
      break;
    case ServerKind::kMemcached:
      argv = {bin, "-u", "nobody", "-l", "127.0.0.1", "-p", std::to_string(s->port_), "-U", "0", "-t", "4",
              "-m", "256", "-c", "1024"};
      break;
    case ServerKind::kPostgres:
      break;  // below: its keeper runs initdb and the postmaster
    case ServerKind::kRedis:
      // Persistence off (no RDB snapshot forks, no AOF fsyncs mid-run),
      // everything on the command line so no redis.conf is read.
      argv = {bin, "--bind", "127.0.0.1", "--port", std::to_string(s->port_), "--dir", dir, "--save", "",
              "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no", "--logfile",
              dir + "/error.log", "--pidfile", dir + "/redis.pid", "--maxclients", "1024",
              // A unix socket too, for clients on this host (the LEMP stack's PHP).
              "--unixsocket", dir + "/redis.sock", "--unixsocketperm", "777"};
      break;
    case ServerKind::kMariadb:
      break;  // below: mariadb-install-db first
    case ServerKind::kUnbound:
      RETURN_IF_ERROR(WriteFile(dir + "/unbound.conf", UnboundConfig(dir, s->port_)));
      argv = {bin, "-d", "-c", dir + "/unbound.conf"};
      break;
    case ServerKind::kCaddy:
      RETURN_IF_ERROR(MakeDocroot(dir));
      RETURN_IF_ERROR(WriteFile(dir + "/Caddyfile", CaddyConfig(dir, s->port_)));
      // Its data and config directories (certificates, autosave) in dir,
      // not root's home.
      argv = {"/usr/bin/env", "XDG_DATA_HOME=" + dir + "/data", "XDG_CONFIG_HOME=" + dir + "/config", "HOME=" + dir,
              bin, "run", "--config", dir + "/Caddyfile", "--adapter", "caddyfile"};
      break;
    case ServerKind::kJdkPool:
      RETURN_IF_ERROR(WriteJdkPoolServer(dir));
      argv = JdkPoolArgv(dir, s->port_);
      break;
    case ServerKind::kLighttpd:
      RETURN_IF_ERROR(MakeDocroot(dir));
      RETURN_IF_ERROR(WriteFile(dir + "/lighttpd.conf", LighttpdConfig(dir, s->port_)));
      argv = {bin, "-D", "-f", dir + "/lighttpd.conf"};
      break;
  }
  const std::string log = dir + "/server.out";
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return ErrStatus("cannot create %s: %s", log.c_str(), strerror(errno));
  if (kind == ServerKind::kMariadb) {
    auto args = MariadbArgs(bin, dir, s->port_, out);
    if (!args.ok()) {
      close(out);
      return ErrStatus("mariadb: %s: %s", args.status().message().c_str(), Tail(log).c_str());
    }
    argv = std::move(*args);
  }
  if (kind == ServerKind::kPostgres) {
    auto pg = StartPostgres(dir, s->port_, out);
    close(out);
    if (!pg.ok()) return ErrStatus("postgres: %s: %s", pg.status().message().c_str(), Tail(log).c_str());
    s->pid_ = pg->postmaster;
    s->child_ = pg->keeper;
    return s.release()->AwaitAccepting(log, 60);
  }
  close(out);
  RETURN_IF_ERROR(s->Spawn(std::move(argv), log));
  // InnoDB's recovery and buffer pool load take a few seconds; the JVM
  // compiles the server's source as it starts.
  return s.release()->AwaitAccepting(log, kind == ServerKind::kMariadb || kind == ServerKind::kJdkPool ? 60 : 10);
}

Status RealServer::Spawn(std::vector<std::string> argv, const std::string& log) {
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return ErrStatus("cannot create %s: %s", log.c_str(), strerror(errno));
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out);
  if (pid_ < 0) return ErrStatus("fork: %s", strerror(errno));
  child_ = pid_;
  setpgid(pid_, pid_);
  return Status::Ok();
}

StatusOr<std::string> RealServer::StartLempBackends(const std::string& dir) {
  for (ServerKind k : {ServerKind::kNginx, ServerKind::kMariadb, ServerKind::kRedis}) {
    const std::string bin = ServerBinary(k);
    if (access(bin.c_str(), X_OK) != 0)
      return ErrStatus("lemp: %s is not installed (%s missing): install the Debian package %s (scripts/install-deps.sh)",
                       ServerName(k), bin.c_str(), ServerPackage(k));
  }
  ASSIGN_OR_RETURN(auto db, Start(ServerKind::kMariadb, dir + "/mariadb"));
  RETURN_IF_ERROR(PrepareMysql(db->port(), LempDatabaseStatements()));
  ASSIGN_OR_RETURN(auto cache, Start(ServerKind::kRedis, dir + "/redis"));
  RETURN_IF_ERROR(PrepareKeyValue(Protocol::kRedis, cache->port(),
                                  {RequestKind{"cached", kLempCachedKey, "get", kLempCachedBytes, 0}}));
  const std::string fpm_socket = dir + "/php-fpm.sock";
  RETURN_IF_ERROR(WriteLempFiles(dir, fpm_socket, dir + "/mariadb/run/mysqld.sock", dir + "/redis/redis.sock"));
  std::unique_ptr<RealServer> fpm(new RealServer());
  fpm->kind_ = ServerKind::kLemp;
  fpm->dir_ = dir;
  fpm->unix_path_ = fpm_socket;
  const std::string log = dir + "/php-fpm.out";
  RETURN_IF_ERROR(fpm->Spawn(PhpFpmArgv(dir), log));
  ASSIGN_OR_RETURN(fpm, fpm.release()->AwaitAccepting(log, 20));
  // Stopped in this order after nginx: the workers first, then what they call.
  backends_.push_back(std::move(fpm));
  backends_.push_back(std::move(db));
  backends_.push_back(std::move(cache));
  return LempNginxLocations(dir + "/www", fpm_socket);
}

StatusOr<std::unique_ptr<RealServer>> RealServer::StartTestserverBackend(const std::string& bin_dir,
                                                                         const std::string& dir) {
  const std::string bin = bin_dir + "/jackdaw-testserver";
  if (bin_dir.empty() || access(bin.c_str(), X_OK) != 0)
    return ErrStatus("%s is missing: build jackdaw first (make)", bin.c_str());
  std::unique_ptr<RealServer> b(new RealServer());
  b->kind_ = ServerKind::kNginxProxy;
  b->dir_ = dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrStatus("cannot create %s: %s", dir.c_str(), ec.message().c_str());
  ASSIGN_OR_RETURN(b->port_, FreeLoopbackPort());
  // A worker per pooled connection: nginx keeps up to 8 idle upstream
  // connections per worker, and a keep-alive worker of the test server
  // holds its connection until it closes.
  const std::string log = dir + "/server.out";
  RETURN_IF_ERROR(b->Spawn({bin, "--port", std::to_string(b->port_), "--keepalive", "--workers", "16", "--docroot",
                            dir + "/www"},
                           log));
  // It calibrates its spin loop before it listens.
  return b.release()->AwaitAccepting(log, 60);
}

std::vector<pid_t> RealServer::pids() const {
  std::vector<pid_t> out = {pid_};
  for (const auto& b : backends_) out.push_back(b->pid());
  return out;
}

StatusOr<std::unique_ptr<RealServer>> RealServer::AwaitAccepting(const std::string& log, int seconds) {
  std::unique_ptr<RealServer> self(this);
  for (int i = 0; i < seconds * 20; ++i) {
    int st;
    if (waitpid(child_, &st, WNOHANG) == child_) {
      pid_ = child_ = -1;
      std::string why = Tail(log);
      if (why.empty()) why = Tail(dir_ + "/error.log");
      if (why.empty()) why = Tail(dir_ + "/run/error.log");
      return ErrStatus("%s exited at start-up: %s", ServerName(kind_), why.c_str());
    }
    if (unix_path_.empty() ? Accepts(port_) : AcceptsUnix(unix_path_)) {
      // Pre-forked workers and worker threads come up right after the
      // listener; give them a moment so they exist when recording starts.
      usleep(300 * 1000);
      return self;
    }
    usleep(50 * 1000);
  }
  (void)Stop();
  return ErrStatus("%s did not accept on 127.0.0.1:%u within %d s (see %s)", ServerName(kind_), port_, seconds,
                   log.c_str());
}

Status RealServer::Stop() {
  // The front first, so it sends its backends nothing more.
  Status front = StopProcess();
  for (auto& b : backends_) {
    Status st = b->Stop();
    if (front.ok()) front = st;
  }
  backends_.clear();
  return front;
}

Status RealServer::StopProcess() {
  if (child_ <= 0) return Status::Ok();
  const pid_t pid = child_;
  pid_ = child_ = -1;
  // nginx: SIGTERM is a fast shutdown; apache2: stops its children;
  // memcached, redis, lighttpd: exit; mariadbd: a normal shutdown;
  // PostgreSQL's keeper: a fast shutdown, then removes
  // the cluster.
  kill(pid, SIGTERM);
  for (int i = 0; i < 400; ++i) {
    int st;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      kill(-pid, SIGKILL);  // stragglers of its group (never ours otherwise)
      return Status::Ok();
    }
    usleep(50 * 1000);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return ErrStatus("%s did not stop within 20 s of SIGTERM; killed", ServerName(kind_));
}

RealServer::~RealServer() { (void)Stop(); }

}  // namespace jackdaw::validate
