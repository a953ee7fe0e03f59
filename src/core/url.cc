// URL parsing (docs/design.md, "URLs"). Hand-written: the grammar is small and every error must name the
// offending part without echoing a password.
#include "dblock/url.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "dblock/errors.h"
#include "dblock/schemes.h"

namespace dblock {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view in, std::string_view what) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size()) {
        throw UsageError("malformed URL: truncated percent-escape in " + std::string(what));
      }
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) throw UsageError("malformed URL: bad percent-escape in " + std::string(what));
      // A NUL would cut every C string the value reaches (a libpq connection string: the rest of
      // the options, connect_timeout among them, silently gone).
      if (hi == 0 && lo == 0) throw UsageError("malformed URL: %00 (NUL) in " + std::string(what));
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

std::string percent_encode(std::string_view in) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : in) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += ch;
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

// A parameter whose value is redacted: any name that mentions a password or a secret, however
// spelled or padded (" password", "SSLPassword").
bool is_secret_parameter(std::string_view key) {
  std::string folded;
  for (char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c))) folded += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* word : {"pass", "secret", "token"}) {
    if (folded.find(word) != std::string::npos) return true;
  }
  return false;
}

void parse_query(std::string_view query, Url& url) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    if (eq == 0) throw UsageError("malformed URL: query parameter without a name");
    std::string key = percent_decode(item.substr(0, eq), "query");
    std::string value = eq == std::string_view::npos ? "" : percent_decode(item.substr(eq + 1), "query");
    url.params.emplace_back(std::move(key), std::move(value));
  }
}

void parse_hosts(std::string_view list, Url& url) {
  if (list.empty()) return;
  while (true) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    Url::Host host;
    std::string_view name = item;
    std::string_view port;
    if (!item.empty() && item[0] == '[') {  // [ipv6]:port
      std::size_t close = item.find(']');
      if (close == std::string_view::npos) throw UsageError("malformed URL: unterminated '[' in host");
      name = item.substr(1, close - 1);
      std::string_view rest = item.substr(close + 1);
      if (!rest.empty()) {
        if (rest[0] != ':') throw UsageError("malformed URL: junk after ']' in host");
        port = rest.substr(1);
      }
    } else {
      std::size_t colon = item.rfind(':');
      if (colon != std::string_view::npos) {
        name = item.substr(0, colon);
        port = item.substr(colon + 1);
      }
    }
    if (name.empty()) throw UsageError("malformed URL: empty host name");
    host.host = percent_decode(name, "host");
    if (!port.empty() || (item.find(':') != std::string_view::npos && item[0] != '[')) {
      if (port.empty() || port.size() > 5 ||
          !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw UsageError("malformed URL: the port is not a number");  // never echoed: it may be part of a password
      }
      host.port = std::stoi(std::string(port));
      if (host.port < 1 || host.port > 65535) throw UsageError("malformed URL: port out of range");
    }
    url.hosts.push_back(std::move(host));
    if (comma == std::string_view::npos) break;
    list = list.substr(comma + 1);
  }
}

}  // namespace

std::optional<std::string> Url::param(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (k == key) return v;
  }
  return std::nullopt;
}

namespace {

enum class Secrets { kMask, kDrop };

std::string render(const Url& url, Secrets secrets) {
  const std::string& scheme = url.scheme;
  const std::string& path = url.path;
  const std::string& user = url.user;
  const std::string& password = url.password;
  const auto& hosts = url.hosts;
  std::string out = scheme + ":";
  if (scheme_url_shape(scheme) == UrlShape::kFile) {
    out += path.size() && path[0] == '/' ? "//" + percent_encode(path) : percent_encode(path);
  } else {
    out += "//";
    const bool mask_password = !password.empty() && secrets == Secrets::kMask;
    if (!user.empty() || mask_password) {
      out += percent_encode(user);
      if (mask_password) out += ":***";
      out += "@";
    }
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (i) out += ",";
      bool v6 = hosts[i].host.find(':') != std::string::npos;
      out += v6 ? "[" + hosts[i].host + "]" : hosts[i].host;
      if (hosts[i].port) out.append(":").append(std::to_string(hosts[i].port));
    }
    if (!path.empty()) out.append("/").append(percent_encode(path));
  }
  bool first = true;
  for (const auto& [key, value] : url.params) {
    const bool secret = is_secret_parameter(key);
    if (secret && secrets == Secrets::kDrop) continue;
    out.append(first ? "?" : "&").append(percent_encode(key)).append("=");
    out.append(secret ? "***" : percent_encode(value));
    first = false;
  }
  return out;
}

}  // namespace

std::string Url::redacted() const { return render(*this, Secrets::kMask); }

std::string Url::without_secrets() const { return render(*this, Secrets::kDrop); }

Url parse_url(std::string_view text) {
  Url url;
  if (text.empty()) throw UsageError("malformed URL: empty");
  if (text.size() > 4096) throw UsageError("malformed URL: longer than 4096 bytes");
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      throw UsageError("malformed URL: contains a control character");
    }
  }
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    throw UsageError("malformed URL: missing scheme (expected e.g. sqlite:///path/locks.db or postgresql://host/db)");
  }
  std::string scheme(text.substr(0, colon));
  for (char& c : scheme) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) {
      throw UsageError("malformed URL: bad character in scheme");
    }
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  url.scheme = scheme;
  std::string_view rest = text.substr(colon + 1);

  std::size_t question = rest.find('?');
  if (question != std::string_view::npos) {
    parse_query(rest.substr(question + 1), url);
    rest = rest.substr(0, question);
  }

  if (scheme_url_shape(scheme) == UrlShape::kFile) {
    // scheme:///abs/path (authority empty) or scheme:relative/path
    if (rest.substr(0, 2) == "//") {
      rest = rest.substr(2);
      if (rest.empty() || rest[0] != '/') {
        throw UsageError("malformed URL: " + scheme + ":// must be followed by an absolute path (" + scheme +
                         ":///abs/path)");
      }
    }
    url.path = percent_decode(rest, "path");
    if (url.path.empty()) throw UsageError("malformed URL: " + scheme + " URL has no file path");
    if (url.path.find('\0') != std::string::npos) throw UsageError("malformed URL: NUL in path");
    return url;
  }

  if (rest.substr(0, 2) != "//") {
    throw UsageError("malformed URL: expected '" + scheme + "://' followed by a host");
  }
  // An '@' after the host part means a user name or password with an unencoded delimiter: the
  // URL would split inside the password and echo a piece of it as a port, path or parameter.
  if (std::size_t cut = text.find_first_of("/?#", colon + 3); cut != std::string_view::npos &&
                                                               text.find('@', cut) != std::string_view::npos &&
                                                               text.substr(0, cut).find('@') == std::string_view::npos) {
    throw UsageError("malformed URL: '@' after the host: percent-encode '/', '?', '#' and '@' in a user name or "
                     "password (%2F, %3F, %23, %40), and '@' in a parameter (%40)");
  }
  rest = rest.substr(2);
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) url.path = percent_decode(rest.substr(slash + 1), "path");
  std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    std::size_t pw = userinfo.find(':');
    url.user = percent_decode(userinfo.substr(0, pw), "user");
    if (pw != std::string_view::npos) url.password = percent_decode(userinfo.substr(pw + 1), "password");
  }
  parse_hosts(authority, url);
  return url;
}

}  // namespace dblock
