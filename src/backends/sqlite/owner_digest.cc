#include "owner_digest.h"

#include <openssl/evp.h>

#include <algorithm>

#include "dblock/errors.h"

namespace dblock::sqlite {

OwnerDigest owner_digest(const std::uint8_t* secret, std::size_t size) {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(secret, size, full, &length, EVP_sha256(), nullptr) != 1 || length < 16) {
    throw Error("sqlite: computing the owner secret's digest failed (OpenSSL SHA-256)");
  }
  OwnerDigest out;
  std::copy_n(full, out.size(), out.begin());
  return out;
}

}  // namespace dblock::sqlite
