#!/bin/sh
# Applies the schema migrations in sql/ to a PostgreSQL database, each once, however many hosts
# run this at the same time (a deploy on every host, say): apply.sh runs under a session lock,
# which PostgreSQL frees the moment dblock's connection ends, so a deploy that crashes mid-way
# never leaves the lock behind and the next one carries on. Usage: migrate.sh POSTGRESQL_URL
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
exec dblock --url "$1" run --mode session --key migrations --wait 5m -- "$here/apply.sh" "$1" "$here/sql"
