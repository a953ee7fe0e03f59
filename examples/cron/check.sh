#!/bin/sh
# check.sh DBLOCK URL: the service's ExecStart, as written in nightly-report.service, from three
# hosts at once: one runs the report (exit 0), two skip (75); a fourth run right after is skipped
# by the window. Each run leaves a textfile promtool accepts, saying whether it ran.
set -eu
dblock_bin="$1"; url="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
exec_start="$(sed -n 's/^ExecStart=//p' "$here/nightly-report.service")"
[ -n "$exec_start" ] || { echo "no ExecStart in nightly-report.service"; exit 1; }
printf '#!/bin/sh\necho "$(hostname) $DBLOCK_FENCE" >> %s/ran\nsleep 1\n' "$work" > "$work/report"
chmod +x "$work/report"
key="nightly-report-$$-$(date +%s%N)"
line="$(printf %s "$exec_start" | sed -e "s|^/usr/bin/dblock|$dblock_bin --url $url|" \
  -e "s|/usr/local/bin/nightly-report|$work/report|" -e "s|--key nightly-report|--key $key|" \
  -e "s|/var/lib/prometheus/node-exporter/nightly-report.prom|$work/HOST.prom|")"
run_host() { eval "$(printf %s "$line" | sed "s|HOST|$1|")"; }
for host in a b c; do (set +e; run_host "$host"; echo $? > "$work/$host.status") & done
wait
status=0
ran=0; skipped=0
for host in a b c; do
  case "$(cat "$work/$host.status")" in 0) ran=$((ran + 1)) ;; 75) skipped=$((skipped + 1)) ;; *) status=1 ;; esac
  promtool check metrics < "$work/$host.prom" || status=1
done
echo "hosts that ran: $ran, skipped: $skipped; report ran $(wc -l < "$work/ran") time(s)"
[ "$ran" = 1 ] && [ "$skipped" = 2 ] && [ "$(wc -l < "$work/ran")" = 1 ] || status=1
grep -q '^dblock_run_acquired{lock=".*"} 1$' "$work"/*.prom || status=1
set +e
run_host late
late=$?
set -e
echo "a run right after: exit $late"
[ "$late" = 75 ] || status=1
grep -q '^dblock_run_acquired{lock=".*"} 0$' "$work/late.prom" || status=1
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$here/nightly-report.timer" 2>&1 | grep -v -e "Unit nightly-report.service" -e "EnvironmentFile" \
    -e "not executable" -e "No such file" || true
fi
exit "$status"
