#include "tls.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "dblock/errors.h"
#include "error_map.h"

namespace dblock::etcd {

namespace {

// The PEM text of the file `path`, given as the URL's `param`; "" for no path.
std::string pem_of(const std::string& path, const char* param) {
  if (path.empty()) return "";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    throw UsageError(std::string("etcd: ") + param + ": cannot read '" + path + "': " + std::strerror(errno), kServiceName);
  }
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0;) text.append(buffer, n);
  if (std::ferror(file.get()) != 0) {
    throw UsageError(std::string("etcd: ") + param + ": cannot read '" + path + "'", kServiceName);
  }
  if (text.find("-----BEGIN ") == std::string::npos) {
    throw UsageError(std::string("etcd: ") + param + ": '" + path + "' holds no PEM", kServiceName);
  }
  return text;
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const Options::Tls& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem_of(tls.ca_file, "cacert");  // "": gRPC's default roots
  ssl.pem_cert_chain = pem_of(tls.cert_file, "cert");
  ssl.pem_private_key = pem_of(tls.key_file, "key");
  return grpc::SslCredentials(ssl);
}

}  // namespace dblock::etcd
