// dblock/url.h — parsing of backend URLs (docs/design.md, "URLs").
//
//   sqlite:///abs/path.db   sqlite:relative.db   sqlite:///path.db?busy_timeout=5000
//   postgresql://user:pw@host:port/db?...        mysql://user:pw@host:port/db?socket=...
//   redis://host:port/N     redlock://h1:p1,h2:p2,h3:p3     zookeeper://h1:2181,h2:2181/chroot
//
// A scheme's shape (dblock/schemes.h, UrlShape) is the one its service registered: sqlite's is
// kFile, every other scheme is read as kHosts. Thread-safe.
#ifndef DBLOCK_URL_H_
#define DBLOCK_URL_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dblock {

struct Url {
  struct Host {
    std::string host;
    int port = 0;  // 0: not given
  };
  std::string scheme;                                       // lower-cased
  std::string user;                                         // percent-decoded
  std::string password;                                     // percent-decoded; never printed
  std::vector<Host> hosts;                                  // empty for a kFile scheme (sqlite)
  std::string path;                                         // percent-decoded, without the leading '/' for kHosts URLs;
                                                            // the file path for a kFile scheme
  std::vector<std::pair<std::string, std::string>> params;  // query parameters, in order, decoded

  std::optional<std::string> param(std::string_view key) const;
  // The URL with the password replaced by "***": safe for logs and error messages.
  std::string redacted() const;
  // The URL without its password and without parameters that name a password or a secret: a
  // form that can be handed on (e.g. to a child process), which must find its credentials itself.
  std::string without_secrets() const;
};

// Throws UsageError naming what is malformed (the message never contains the password).
Url parse_url(std::string_view text);

}  // namespace dblock

#endif  // DBLOCK_URL_H_
