// TLS for the real-server suite: a self-signed certificate for a server's
// private configuration, and the client side of a TLS connection (OpenSSL)
// for the suite's HTTP client, with the protocol version pinned so one
// workload exercises one version's handshake.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace jackdaw::validate {

// A P-256 key and a certificate for CN=localhost valid for a day, as PEM
// files (the key 0600).
Status WriteSelfSignedCertificate(const std::string& key_path, const std::string& cert_path);

// One client context per workload: TLS `version` (12 or 13) only, no
// certificate verification (the server's certificate is the one above).
// Connections may resume the session the previous one ended with, so a
// connection per request exercises resumed handshakes as browsers do.
class TlsClientContext {
 public:
  static StatusOr<std::unique_ptr<TlsClientContext>> Create(int version);
  ~TlsClientContext();
  // The handshake on a connected socket; `resume` (may be null) is a
  // session to offer. Returns the connection, owned by the caller.
  StatusOr<SSL*> Handshake(int fd, SSL_SESSION* resume) const;

 private:
  explicit TlsClientContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// OpenSSL's reason for the last failure, for one-line errors.
std::string TlsError();

}  // namespace jackdaw::validate
