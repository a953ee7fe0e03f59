#include "owner_digest.h"

#include <openssl/evp.h>

#include <algorithm>

#include "dblock/errors.h"

namespace dblock::sqlite {

bool sha256(const void* data, std::size_t size, Sha256& out) {
  // Fetched once: EVP_sha256() makes every EVP_Digest look the implementation up again (OpenSSL 3),
  // which doubles the cost of a digest this small. Never freed; thread-safe after the first call.
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned int length = 0;
  return algorithm != nullptr && EVP_Digest(data, size, out.data(), &length, algorithm, nullptr) == 1 &&
         length == out.size();
}

OwnerDigest owner_digest(const std::uint8_t* secret, std::size_t size) {
  Sha256 full;
  if (!sha256(secret, size, full)) {
    throw Error("sqlite: computing the owner secret's digest failed (OpenSSL SHA-256)");
  }
  OwnerDigest out;
  std::copy_n(full.begin(), out.size(), out.begin());
  return out;
}

}  // namespace dblock::sqlite
