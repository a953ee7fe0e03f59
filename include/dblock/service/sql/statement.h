// The statements of a SQL service: each is a named constant in the service's sql.h, so the
// compiler checks every name a call site uses; a Registry renders them once per service (tables
// filled in, ":name" parameters spelled as the driver wants them) and gives each a position that
// per-connection caches of prepared statements index. Call sites bind arguments by name (args.h)
// and read rows by column name (rows.h): nothing in a service counts positions.
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

// How a driver spells a statement's parameters. In sql.h a parameter is ":name" (a letter or '_',
// then letters, digits, '_') outside quotes; "::" (PostgreSQL's cast) is not one.
enum class ParamStyle {
  kQuestion,          // `?` at each use (Connector/C++): a name used twice is bound twice
  kDollar,            // `$n`, one number per distinct name (libpq)
  kQuestionNumbered,  // `?n`, one number per distinct name (SQLite)
};

// A statement's text in a driver's spelling, and the parameter name bound at each position
// (position i binds params[i]: the i-th `?`, or `$i+1` / `?i+1`).
struct DriverText {
  std::string text;
  std::vector<std::string> params;
};
DriverText spell_params(std::string_view text, ParamStyle style);

class Registry {
 public:
  // Renders each statement and spells its parameters in `style`.
  Registry(std::span<const Statement* const> statements, const Placeholders& placeholders,
           ParamStyle style = ParamStyle::kQuestionNumbered);

  std::size_t size() const { return statements_.size(); }
  // The position of `statement`. Throws std::logic_error for one that was not registered.
  std::size_t index(const Statement& statement) const;
  const Statement& at(std::size_t i) const { return *statements_[i]; }
  const std::string& text(std::size_t i) const { return texts_[i]; }
  const std::string& text(const Statement& statement) const { return texts_[index(statement)]; }
  // The parameter names by position of statement `i` (DriverText::params).
  const std::vector<std::string>& params(std::size_t i) const { return params_[i]; }

 private:
  std::vector<const Statement*> statements_;
  std::vector<std::string> texts_;
  std::vector<std::vector<std::string>> params_;
};

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_STATEMENT_H_
