// The statements of a SQL service: each is a named constant in the service's sql.h, so the
// compiler checks every name a call site uses; a Registry renders them once per service (tables
// filled in) and gives each a position that per-connection caches of prepared statements index.
//
//
// Thread safety: Statement and Placeholders are values; a Registry is immutable after
// construction and may be shared by every thread.
#ifndef DBLOCK_SERVICE_SQL_STATEMENT_H_
#define DBLOCK_SERVICE_SQL_STATEMENT_H_

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dblock::sql {

// One statement of a dialect. `text` may name tables as "{X}" (one letter), filled in by render().
struct Statement {
  const char* name;  // also the server-side prepared statement's name where the driver needs one
  const char* text;
};

// What each "{X}" of a template stands for (quoted identifiers, literals).
class Placeholders {
 public:
  Placeholders& set(char letter, std::string value);
  const std::string* find(char letter) const;

 private:
  std::array<std::string, 26> values_;
  std::array<bool, 26> set_{};
};

// The tables of every SQL service, named by `prefix` and quoted by `quote`: {L} leases,
// {R} readers, {W} waiters, {V} schema_version, {H} force_releases (the history of evictions). A
// dialect adds its own letters. REQUIRES: prefix
// validated.
Placeholders lease_tables(const std::string& prefix, std::string (*quote)(std::string_view));

// `tmpl` with every "{X}" outside quotes replaced by its placeholder; unknown letters stay as they
// are. REQUIRES: placeholder values are validated and quoted identifiers or literals.
std::string render(std::string_view tmpl, const Placeholders& placeholders);

class Registry {
 public:
  Registry(std::span<const Statement* const> statements, const Placeholders& placeholders);

  std::size_t size() const { return statements_.size(); }
  // The position of `statement`. Throws std::logic_error for one that was not registered.
  std::size_t index(const Statement& statement) const;
  const Statement& at(std::size_t i) const { return *statements_[i]; }
  const std::string& text(std::size_t i) const { return texts_[i]; }
  const std::string& text(const Statement& statement) const { return texts_[index(statement)]; }

 private:
  std::vector<const Statement*> statements_;
  std::vector<std::string> texts_;
};

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_STATEMENT_H_
