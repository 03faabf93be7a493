#include "validate/tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cstdio>

namespace jackdaw::validate {
namespace {

template <typename T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Freer<X509, X509_free>>;

Status WritePem(const std::string& path, mode_t mode, bool (*write)(FILE*, void*), void* what) {
  FILE* f = fopen(path.c_str(), "wx");
  if (!f) return ErrStatus("cannot create %s", path.c_str());
  fchmod(fileno(f), mode);
  const bool ok = write(f, what);
  if (fclose(f) != 0 || !ok) return ErrStatus("cannot write %s: %s", path.c_str(), TlsError().c_str());
  return Status::Ok();
}

}  // namespace

std::string TlsError() {
  const unsigned long e = ERR_get_error();
  if (!e) return "no OpenSSL error recorded";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

Status WriteSelfSignedCertificate(const std::string& key_path, const std::string& cert_path) {
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  if (!key || !cert) return ErrStatus("cannot make a TLS key: %s", TlsError().c_str());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  if (!X509_sign(cert.get(), key.get(), EVP_sha256()))
    return ErrStatus("cannot sign a TLS certificate: %s", TlsError().c_str());
  RETURN_IF_ERROR(WritePem(
      key_path, 0600,
      [](FILE* f, void* k) {
        return PEM_write_PrivateKey(f, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0, nullptr, nullptr) == 1;
      },
      key.get()));
  return WritePem(
      cert_path, 0644, [](FILE* f, void* c) { return PEM_write_X509(f, static_cast<X509*>(c)) == 1; }, cert.get());
}

StatusOr<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(int version) {
  if (version != 12 && version != 13) return ErrStatus("TLS version %d: use 12 or 13", version);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return ErrStatus("cannot make a TLS context: %s", TlsError().c_str());
  const int v = version == 12 ? TLS1_2_VERSION : TLS1_3_VERSION;
  SSL_CTX_set_min_proto_version(ctx, v);
  SSL_CTX_set_max_proto_version(ctx, v);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
  return std::unique_ptr<TlsClientContext>(new TlsClientContext(ctx));
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

StatusOr<SSL*> TlsClientContext::Handshake(int fd, SSL_SESSION* resume) const {
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return ErrStatus("cannot make a TLS connection: %s", TlsError().c_str());
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (resume) SSL_set_session(ssl, resume);
  if (SSL_connect(ssl) != 1) {
    const std::string why = TlsError();
    SSL_free(ssl);
    return ErrStatus("TLS handshake failed: %s", why.c_str());
  }
  return ssl;
}

}  // namespace jackdaw::validate
