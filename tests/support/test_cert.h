// A self-signed certificate made at test time with OpenSSL, for TLS tests
// on loopback (the webhook runner, the CLI's API client): an EC P-256 key,
// valid from an hour ago for a day, a CA itself (so the certificate is also
// the CA file that trusts it), with the given subjectAltName.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>
#include <utility>

namespace kairos::test_support {

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

inline TestCert make_self_signed_cert(const char* san = "DNS:localhost,IP:127.0.0.1") {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  EXPECT_NE(key, nullptr);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  const std::pair<int, const char*> exts[] = {
      {NID_subject_alt_name, san},
      {NID_basic_constraints, "critical,CA:TRUE"},
      {NID_key_usage, "critical,keyCertSign,digitalSignature"},
  };
  for (const auto& [nid, value] : exts) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    EXPECT_NE(e, nullptr);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
  }
  EXPECT_GT(X509_sign(x, key, EVP_sha256()), 0);
  TestCert out;
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, x);
  out.cert_pem = bio_text(cert_bio);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  out.key_pem = bio_text(key_bio);
  BIO_free(key_bio);
  X509_free(x);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace kairos::test_support
