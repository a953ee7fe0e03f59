#include "dblock/service/sql/args.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace dblock::sql {

Arg::Arg(const char* n, const Value& v) : name(n) {
  std::visit([this](const auto& x) { value = x; }, v);
}

Value value_of(const ArgValue& value) {
  return std::visit(
      [](const auto& v) -> Value {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, OwnerSecret>) {
          return v.hex();
        } else {
          return v;
        }
      },
      value);
}

std::vector<const ArgValue*> Args::in_order(const std::vector<std::string>& params, const char* statement) const {
  std::vector<const ArgValue*> out;
  out.reserve(params.size());
  for (const std::string& param : params) {
    auto it = std::find_if(args_.begin(), args_.end(), [&](const Arg& a) { return param == a.name; });
    if (it == args_.end()) {
      throw std::logic_error(std::string("sql: ") + statement + ": parameter :" + param + " has no argument");
    }
    out.push_back(&it->value);
  }
  return out;
}

}  // namespace dblock::sql
