// What SQLite's tables store for an owner secret: its digest, the first 128 bits of SHA-256 of its
// 16 bytes (the same digest the server computes on PostgreSQL and MariaDB). Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_OWNER_DIGEST_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_OWNER_DIGEST_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace dblock::sqlite {

using OwnerDigest = std::array<std::uint8_t, 16>;

// Throws Error if the digest cannot be computed (OpenSSL refused).
OwnerDigest owner_digest(const std::uint8_t* secret, std::size_t size);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_OWNER_DIGEST_H_
