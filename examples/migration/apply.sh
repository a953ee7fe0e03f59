#!/bin/sh
# apply.sh URL DIR: applies DIR/NNN_name.sql in order, each not yet in schema_migrations, the
# migration and its record in one transaction. Run only under the migrations lock (migrate.sh).
set -eu
url="$1"
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
psql() { command psql -qX -v ON_ERROR_STOP=1 -d "$url" "$@"; }
psql -c "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
for file in "$2"/*.sql; do
  version="$(basename "$file" .sql)"
  case "$version" in *[!0-9a-z_]*) echo "apply.sh: bad migration name $version" >&2; exit 1 ;; esac
  [ "$(psql -At -c "SELECT count(*) FROM schema_migrations WHERE version = '$version'")" = 0 ] || continue
  psql --single-transaction -f "$file" -c "INSERT INTO schema_migrations (version) VALUES ('$version')"
  echo "applied $version"
done
