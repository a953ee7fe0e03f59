// The channel credentials of Options::tls: gRPC's SSL credentials from the PEM files, or none.
// Internal.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_TLS_H_
#define DBLOCK_SRC_BACKENDS_ETCD_TLS_H_

#include <grpcpp/security/credentials.h>

#include <memory>

#include "dblock/etcd/etcd.h"

namespace dblock::etcd {

// Insecure credentials when TLS is off; else SSL credentials with the files' contents. Throws
// UsageError naming the parameter and the path of a file that cannot be read or holds no PEM
// (never the file's content).
std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const Options::Tls& tls);

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_TLS_H_
