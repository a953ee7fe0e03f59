#!/bin/sh
# check.sh DBLOCK URL: runs migrate.sh three times at once (three "hosts") on a fresh set of
# tables and checks that every migration was applied exactly once and every run succeeded.
set -eu
dblock_bin="$1"; url="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" && ln -s "$dblock_bin" "$work/bin/dblock"
export PATH="$work/bin:$PATH" PGOPTIONS="-c client_min_messages=warning"
psql -qX -v ON_ERROR_STOP=1 -d "$url" -c "DROP TABLE IF EXISTS example_accounts, schema_migrations"
for i in 1 2 3; do "$here/migrate.sh" "$url" >"$work/run$i.log" 2>&1 & eval "pid$i=\$!"; done
status=0
for i in 1 2 3; do eval "wait \$pid$i" || { echo "run $i failed:"; cat "$work/run$i.log"; status=1; }; done
applied="$(cat "$work"/run*.log | grep -c '^applied ' || true)"
recorded="$(psql -qXAt -d "$url" -c "SELECT string_agg(version, ' ' ORDER BY version) FROM schema_migrations")"
echo "applied lines: $applied; recorded: $recorded"
[ "$applied" = 3 ] || status=1
[ "$recorded" = "001_accounts 002_account_email 003_accounts_by_owner" ] || status=1
psql -qX -d "$url" -c "DROP TABLE IF EXISTS example_accounts, schema_migrations"
exit "$status"
