// Owner secrets: 128 bits from the kernel CSPRNG (getrandom(2)), never from a seeded PRNG.
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "dblock/errors.h"
#include "dblock/service/lease_service.h"

namespace dblock {

OwnerSecret OwnerSecret::generate() {
  OwnerSecret secret;
  std::size_t filled = 0;
  // getrandom never returns short reads for <= 256 bytes once the pool is initialised, but EINTR
  // is possible while it is not; the loop is bounded by the buffer size.
  for (int attempts = 0; filled < secret.bytes.size() && attempts < 100; ++attempts) {
    ssize_t n = getrandom(secret.bytes.data() + filled, secret.bytes.size() - filled, 0);
    if (n > 0) {
      filled += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      throw Error(std::string("getrandom failed: ") + std::strerror(errno));
    }
  }
  if (filled < secret.bytes.size()) throw Error("getrandom did not deliver 16 bytes");
  return secret;
}

std::string OwnerSecret::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace dblock
