#include "validate/real_lemp.h"

#include <sys/stat.h>

#include <filesystem>

#include "common/safe_file.h"

namespace jackdaw::validate {
namespace {

// As root into the run's directory: the project's owned-file writer (no
// following a planted symlink); world-readable, for php-fpm's workers.
Status WriteText(const std::string& path, const std::string& text) { return WriteOwnedFile(path, text, 0644); }

// Each script sets Content-Length, so nginx answers with it rather than
// chunked (the suite's client checks the length against the kind's).
std::string DbConnect(const std::string& db_socket) {
  return "$db = new mysqli('localhost', 'root', '', 'jdw', 0, '" + db_socket + "');\n";
}

}  // namespace

std::vector<RequestKind> LempRequestKinds() {
  return {
      {"point", "/point.php", "get", 32, 200},     // an MD5 hex digest
      {"update", "/update.php", "get", 2, 200},    // "ok"
      {"cached", "/cached.php", "get", kLempCachedBytes, 200},
      {"cpuloop", "/cpu.php", "get", 4, 200},      // "done"
  };
}

std::vector<std::string> LempDatabaseStatements() {
  return {"CREATE DATABASE jdw",
          "CREATE TABLE jdw.kv (k INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
          "INSERT INTO jdw.kv SELECT seq, MD5(seq) FROM jdw.seq_1_to_10000"};
}

Status WriteLempFiles(const std::string& dir, const std::string& fpm_socket, const std::string& db_socket,
                      const std::string& cache_socket) {
  namespace fs = std::filesystem;
  const std::string www = dir + "/www";
  std::error_code ec;
  fs::create_directories(www, ec);
  if (ec) return ErrStatus("cannot create %s: %s", www.c_str(), ec.message().c_str());
  chmod(dir.c_str(), 0755);
  chmod(www.c_str(), 0755);
  RETURN_IF_ERROR(WriteText(dir + "/php.ini",
                            "zend_extension=opcache\n"
                            "extension=mysqlnd\n"
                            "extension=mysqli\n"
                            "extension=igbinary\n"
                            "extension=redis\n"
                            "opcache.enable=1\n"
                            "display_errors=Off\n"
                            "log_errors=On\n"
                            "error_log=" + dir + "/php-errors.log\n"));
  RETURN_IF_ERROR(WriteText(dir + "/php-fpm.conf",
                            "[global]\n"
                            "pid = " + dir + "/php-fpm.pid\n"
                            "error_log = " + dir + "/php-fpm.log\n"
                            "daemonize = no\n"
                            "[www]\n"
                            "user = nobody\n"
                            "group = nogroup\n"
                            "listen = " + fpm_socket + "\n"
                            "listen.mode = 0666\n"
                            "pm = static\n"
                            "pm.max_children = 4\n"
                            "catch_workers_output = yes\n"));
  RETURN_IF_ERROR(WriteText(www + "/point.php",
                            "<?php\n" + DbConnect(db_socket) +
                                "$row = $db->query('SELECT v FROM kv WHERE k = 4242')->fetch_row();\n"
                                "$db->close();\n"
                                "header('Content-Length: ' . strlen($row[0]));\n"
                                "echo $row[0];\n"));
  // A random row: four workers updating one row would wait on its lock.
  RETURN_IF_ERROR(WriteText(www + "/update.php",
                            "<?php\n" + DbConnect(db_socket) +
                                "$k = mt_rand(1, 10000);\n"
                                "$db->query(\"UPDATE kv SET v = MD5(RAND()) WHERE k = $k\");\n"
                                "if ($db->affected_rows != 1) http_response_code(500);\n"
                                "$db->close();\n"
                                "header('Content-Length: 2');\n"
                                "echo 'ok';\n"));
  RETURN_IF_ERROR(WriteText(www + "/cached.php",
                            "<?php\n"
                            "$cache = new Redis();\n"
                            "$cache->connect('" + cache_socket + "');\n"
                            "$v = $cache->get('" + std::string(kLempCachedKey) + "');\n"
                            "$cache->close();\n"
                            "header('Content-Length: ' . strlen($v));\n"
                            "echo $v;\n"));
  // A few milliseconds of interpreter CPU and nothing else.
  RETURN_IF_ERROR(WriteText(www + "/cpu.php",
                            "<?php\n"
                            "$x = 0;\n"
                            "for ($i = 0; $i < 200000; $i++) { $x += $i % 7; }\n"
                            "header('Content-Length: 4');\n"
                            "echo 'done';\n"));
  return Status::Ok();
}

std::vector<std::string> PhpFpmArgv(const std::string& dir) {
  // env empties PHP_INI_SCAN_DIR for php-fpm alone (it then reads no
  // conf.d under /etc/php) and execs it: the pid stays the one we forked.
  return {"/usr/bin/env", "PHP_INI_SCAN_DIR=", kPhpFpmBinary, "-F", "-c", dir + "/php.ini", "-y",
          dir + "/php-fpm.conf"};
}

std::string LempNginxLocations(const std::string& www, const std::string& fpm_socket) {
  std::string params;
  for (const char* p : {"SCRIPT_FILENAME $document_root$fastcgi_script_name", "QUERY_STRING $query_string",
                        "REQUEST_METHOD $request_method", "CONTENT_TYPE $content_type",
                        "CONTENT_LENGTH $content_length", "SCRIPT_NAME $fastcgi_script_name",
                        "REQUEST_URI $request_uri", "DOCUMENT_URI $document_uri", "DOCUMENT_ROOT $document_root",
                        "SERVER_PROTOCOL $server_protocol", "GATEWAY_INTERFACE CGI/1.1", "SERVER_SOFTWARE nginx",
                        "REMOTE_ADDR $remote_addr", "REMOTE_PORT $remote_port", "SERVER_ADDR $server_addr",
                        "SERVER_PORT $server_port", "SERVER_NAME $server_name", "REDIRECT_STATUS 200"})
    params += std::string("      fastcgi_param ") + p + ";\n";
  return "    root " + www + ";\n"
         "    location ~ \\.php$ {\n"
         "      fastcgi_pass unix:" + fpm_socket + ";\n" +
         params +
         "    }\n";
}

}  // namespace jackdaw::validate
