#include "tls.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "dblock/errors.h"
#include "error_map.h"

namespace dblock::etcd {

namespace {

// The PEM text of the file `path`, given as the URL's `param`; "" for no path.
std::string pem_of(const std::string& path, const char* param) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError(std::string("etcd: ") + param + ": cannot read '" + path + "': " + std::strerror(errno), kServiceName);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    throw UsageError(std::string("etcd: ") + param + ": '" + path + "' holds no PEM", kServiceName);
  }
  return text.str();
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
