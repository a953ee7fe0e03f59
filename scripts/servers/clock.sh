# Sourced by the server scripts. DBLOCK_SERVER_CLOCK_FILE=FILE in the environment of `start`: the
# server's wall clock is offset by what FILE says in libfaketime's format ("+2", "-1.5"), re-read at
# every reading of the clock, so a test steps the server's clock by writing FILE. Its monotonic
# clocks are left alone. Sets clock_preload: the command prefix that starts a server so.
clock_preload=()
if [[ -n "${DBLOCK_SERVER_CLOCK_FILE:-}" ]]; then
  faketime_lib=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -1)
  [[ -n "$faketime_lib" ]] || { echo "$(basename "$0"): libfaketime not found (apt-get install faketime)" >&2; exit 1; }
  clock_preload=(env LD_PRELOAD="$faketime_lib" FAKETIME_TIMESTAMP_FILE="$DBLOCK_SERVER_CLOCK_FILE" FAKETIME_NO_CACHE=1
                 FAKETIME_DONT_FAKE_MONOTONIC=1)
fi
