#include "owner_digest.h"

#include <openssl/evp.h>

#include <algorithm>

#include "dblock/errors.h"

namespace dblock::sqlite {

OwnerDigest owner_digest(const std::uint8_t* secret, std::size_t size) {
  // Fetched once: EVP_sha256() makes every EVP_Digest look the implementation up again (OpenSSL 3),
  // which doubles the cost of a digest this small. Never freed; thread-safe after the first call.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (sha256 == nullptr || EVP_Digest(secret, size, full, &length, sha256, nullptr) != 1 || length < 16) {
    throw Error("sqlite: computing the owner secret's digest failed (OpenSSL SHA-256)");
  }
  OwnerDigest out;
  std::copy_n(full, out.size(), out.begin());
  return out;
}

}  // namespace dblock::sqlite
