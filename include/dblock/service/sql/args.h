// Statement arguments by name: a call site names each value as sql.h names the parameter
// (":fence" is bound by {"fence", f}), and a service's driver binds them in the order its
// Registry spelled them (Registry::params). A parameter without an argument is a
// std::logic_error naming both: a typo fails on its first run, not by binding a value to the wrong
// column. Arguments a statement does not name are ignored, so that one set serves the variants of
// a statement (a queued and an unqueued acquire).
//
// Thread safety: values; Args is used by the thread that made it.
#ifndef DBLOCK_SERVICE_SQL_ARGS_H_
#define DBLOCK_SERVICE_SQL_ARGS_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dblock/lease_info.h"
#include "dblock/sql/features.h"

namespace dblock::sql {

// What an argument may be: SQL NULL, an integer, a float, text, or an owner secret (each driver
// binds a secret as its tables store it: a digest, a UUID, hex digits).
using ArgValue = std::variant<std::monostate, std::int64_t, double, std::string, OwnerSecret>;

struct Arg {
  Arg(const char* n, std::nullopt_t) : name(n) {}
  template <std::integral T>
  Arg(const char* n, T v) : name(n), value(static_cast<std::int64_t>(v)) {}
  Arg(const char* n, double v) : name(n), value(v) {}
  Arg(const char* n, std::string_view v) : name(n), value(std::string(v)) {}
  Arg(const char* n, const std::string& v) : name(n), value(v) {}
  Arg(const char* n, std::string&& v) : name(n), value(std::move(v)) {}
  Arg(const char* n, const char* v) : name(n), value(std::string(v)) {}
  Arg(const char* n, const OwnerSecret& v) : name(n), value(v) {}
  Arg(const char* n, const Value& v);
  // nullopt binds NULL.
  template <class T>
  Arg(const char* n, const std::optional<T>& v) : Arg(v ? Arg(n, *v) : Arg(n, std::nullopt)) {}

  const char* name;
  ArgValue value;
};

class Args {
 public:
  Args() = default;
  Args(std::initializer_list<Arg> args) : args_(args) {}

  Args& add(Arg arg) {
    args_.push_back(std::move(arg));
    return *this;
  }
  bool empty() const { return args_.empty(); }

  // The argument of each of `params` in order (a name may repeat). Throws std::logic_error naming
  // `statement` when a parameter has no argument.
  std::vector<const ArgValue*> in_order(const std::vector<std::string>& params, const char* statement) const;

 private:
  std::vector<Arg> args_;
};

// `value` as a Value: a secret as its 32 hex digits (a driver that stores secrets otherwise binds
// the OwnerSecret itself).
Value value_of(const ArgValue& value);

// A ticket, a limit, a permit count where 0 means "none": NULL for 0.
inline std::optional<std::int64_t> unless_zero(std::int64_t v) {
  return v == 0 ? std::nullopt : std::optional<std::int64_t>(v);
}

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_ARGS_H_
