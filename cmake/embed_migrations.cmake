# Writes OUT: a C++ file defining dblock::<BACKEND>::kMigrations from the FILES (sorted NNNN_*.sql,
# "|"-separated).
string(REPLACE "|" ";" FILES "${FILES}")
set(body "")
foreach(f IN LISTS FILES)
  get_filename_component(name ${f} NAME_WE)
  string(REGEX MATCH "^[0-9]+" number ${name})
  math(EXPR number "${number} + 0")
  file(READ ${f} sql)
  string(APPEND body "  {${number}, \"${name}\", R\"dblock_sql(${sql})dblock_sql\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from migrations/${BACKEND}/ by cmake/embed_migrations.cmake. Do not edit.\n#include \"dblock/service/sql/migration.h\"\nnamespace dblock::${BACKEND} {\nextern const std::vector<sql::Migration> kMigrations = {\n${body}};\n}  // namespace dblock::${BACKEND}\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
