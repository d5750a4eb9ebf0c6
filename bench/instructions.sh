#!/usr/bin/env bash
# User-space instructions per request of a running server, counted by callgrind: a figure
# that does not move with the machine's load, for changes too small to see in a rate on
# a shared 2-core machine (issue 19). Kernel time is not counted, and valgrind's virtual
# CPU has fewer extensions than the real one (SHA-256 runs in software, for one), so it
# complements the rates of http_bench.py rather than replacing them.
#
#   bench/instructions.sh URL [WRK_SCRIPT] -- SERVER_COMMAND...
#
# Starts SERVER_COMMAND under callgrind, waits for URL to answer, warms up, zeroes the
# counters, runs wrk (one thread, 8 keep-alive connections, DURATION seconds, default 10)
# against URL (with WRK_SCRIPT, e.g. one that sets the Authorization header and picks
# listing ids), dumps the counters and prints the requests answered and the instructions
# per request. The profile stays in $CALLGRIND_DIR (default a temp dir) for
# callgrind_annotate. Needs valgrind and wrk.
#
# e.g., on a database seeded by http_bench.py:
#   RUST_LOG=warn REHOME_DATABASE_URL=sqlite:///tmp/bench.db \
#     bench/instructions.sh http://127.0.0.1:18501/healthz -- target/release/rehome serve --addr 127.0.0.1:18501
set -euo pipefail

url=$1
shift
script=()
if [[ $1 != "--" ]]; then
  script=(-s "$1")
  shift
fi
[[ $1 == "--" ]] || { echo "usage: $0 URL [WRK_SCRIPT] -- SERVER_COMMAND..." >&2; exit 2; }
shift

dir=${CALLGRIND_DIR:-$(mktemp -d)}
valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out.%p" "$@" >"$dir/server.out" 2>"$dir/valgrind.log" &
server=$!
trap 'kill -9 $server 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -s -o /dev/null "$url" && break
  sleep 1
done
wrk -t1 -c8 -d3s "${script[@]}" "$url" >/dev/null
callgrind_control -z $server >/dev/null 2>&1
out=$(wrk -t1 -c8 -d"${DURATION:-10}"s "${script[@]}" "$url")
callgrind_control -d $server >/dev/null 2>&1
requests=$(awk '/requests in/ {print $1}' <<<"$out")
if grep -q "Non-2xx" <<<"$out"; then
  echo "warning: some answers were not 2xx:" >&2
  grep "Non-2xx" <<<"$out" >&2
fi
profile=$(ls -t "$dir"/callgrind.out.* | head -1)
total=$(awk '/^(summary|totals):/ {print $2; exit}' "$profile")
echo "requests $requests  instructions per request $((total / requests))  profile $profile"
