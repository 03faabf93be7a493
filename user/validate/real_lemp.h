// The LEMP stack of the real-server suite, as Debian packages it: nginx
// passes each PHP request over FastCGI to php-fpm (a static pool of 4
// workers on a unix socket, a connection per request as Debian's
// snippets/fastcgi-php.conf has it), and the PHP scripts query MariaDB over
// its unix socket and redis over its own, each with a connection per
// request (mysqli and phpredis without persistent connections). A request
// touches three processes: nginx, a php-fpm worker, and the database or
// the cache.
//
// Everything is private to the stack's directory: php-fpm runs with our
// php.ini only (PHP_INI_SCAN_DIR empty, so /etc/php is not read) loading
// the extensions Debian enables for it (opcache, mysqlnd, mysqli,
// igbinary, redis); its workers run as nobody.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "validate/real_client.h"

namespace jackdaw::validate {

// Debian's php-fpm binary and the package that provides it.
constexpr const char* kPhpFpmBinary = "/usr/sbin/php-fpm8.2";

// The request kinds: a point SELECT, a 1-row UPDATE (a commit), a value
// read from redis, and a CPU loop in PHP.
std::vector<RequestKind> LempRequestKinds();

// Writes php.ini, php-fpm.conf (listening on fpm_socket) and the scripts
// (into www/, which nginx serves) under dir; the scripts reach MariaDB at
// db_socket and redis at cache_socket.
Status WriteLempFiles(const std::string& dir, const std::string& fpm_socket, const std::string& db_socket,
                      const std::string& cache_socket);

// php-fpm in the foreground with only our configuration.
std::vector<std::string> PhpFpmArgv(const std::string& dir);

// nginx's server block for the stack: *.php to php-fpm over FastCGI, the
// parameters of Debian's fastcgi_params inlined (its /etc is not read).
std::string LempNginxLocations(const std::string& www, const std::string& fpm_socket);

// What the scripts need stored before recording: MariaDB's statements (run
// as in the mariadb workload), and the redis value's size.
std::vector<std::string> LempDatabaseStatements();
constexpr size_t kLempCachedBytes = 1024;
constexpr const char* kLempCachedKey = "lemp:cached";

}  // namespace jackdaw::validate
