#!/usr/bin/env bash
# rehome's metrics against the real Prometheus (issue 33): the alert rules checked and
# unit-tested by promtool; a scrape of a running server checked by `promtool check
# metrics`; then Prometheus itself scrapes the server while traffic (and a webhook
# endpoint that always fails, so deliveries retry and die) runs, and its HTTP API must
# show the node up, the request counter by route, and the retried and dead deliveries.
#
#   tests/prometheus/run.sh [REHOME_BINARY]   (default $CARGO_TARGET_DIR/debug/rehome)
#
# Needs prometheus and promtool (Debian: apt-get install prometheus), curl and python3.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/rehome}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$work"/*.log; do echo "--- $log" >&2; tail -20 "$log" >&2; done
  exit 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "-- alert rules: promtool check rules, promtool test rules"
promtool check rules "$root/deploy/prometheus/alerts.yml"
(cd "$root/deploy/prometheus" && promtool test rules alerts_test.yml)

api=$(free_port) metrics=$(free_port) prom=$(free_port) hook=$(free_port)

# A webhook endpoint that always answers 500: every delivery is retried until its (short)
# retry window closes, then it is dead.
python3 - "$hook" >"$work/hook.log" 2>&1 <<'PY' &
import http.server, sys
class Fail(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(500); self.send_header("content-length", "0"); self.end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Fail).serve_forever()
PY
pids+=($!)

echo "-- rehome serve --demo with REHOME_METRICS_ADDR=127.0.0.1:$metrics"
REHOME_DATABASE_URL="sqlite://$work/rehome.db" REHOME_MEDIA_DIR="$work/media" \
  REHOME_ADDR="127.0.0.1:$api" REHOME_METRICS_ADDR="127.0.0.1:$metrics" \
  REHOME_ALLOW_PRIVATE_NETWORK=true REHOME_WEBHOOK_ALLOW_HTTP=true REHOME_WEBHOOK_RETRY_BASE_MS=200 \
  REHOME_WEBHOOK_RETRY_WINDOW_S=3 REHOME_WEBHOOK_POLL_MS=100 \
  "$bin" serve --demo >"$work/serve.out" 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$api/healthz" && break
  sleep 0.2
done
curl -sf -o /dev/null "http://127.0.0.1:$api/healthz" || fail "rehome did not start"
key=$(sed -n 3p "$work/serve.out" | tr -d ' ')
[[ -n $key ]] || fail "no demo key in the output of serve --demo"

echo "-- promtool check metrics on a scrape"
curl -sf "http://127.0.0.1:$metrics/metrics" >"$work/scrape.txt" || fail "no /metrics on the metrics listener"
promtool check metrics <"$work/scrape.txt" || fail "promtool check metrics"
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api/metrics") == 404 ]] ||
  fail "the public listener serves /metrics"

echo "-- prometheus on 127.0.0.1:$prom scraping it every second"
cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$root/deploy/prometheus/alerts.yml"]
scrape_configs:
  - job_name: rehome
    static_configs: [{targets: ["127.0.0.1:$metrics"]}]
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom" >"$work/prometheus.log" 2>&1 &
pids+=($!)

echo "-- traffic: reads, an unknown path, a failing webhook endpoint and test events"
auth=(-H "Authorization: Bearer $key")
curl -sf -o /dev/null -X PATCH "${auth[@]}" -H 'content-type: application/json' \
  -d "{\"url\": \"http://127.0.0.1:$hook/hook\"}" "http://127.0.0.1:$api/v1/partner/settings/integrations/webhook" ||
  fail "cannot set the webhook endpoint"
for _ in 1 2 3; do
  curl -sf -o /dev/null -X POST "${auth[@]}" -H 'content-type: application/json' -d '{}' \
    "http://127.0.0.1:$api/v1/partner/settings/integrations/webhook/test" || fail "cannot send a test event"
done
for _ in $(seq 20); do
  curl -s -o /dev/null "${auth[@]}" "http://127.0.0.1:$api/v1/listings/options"
  curl -s -o /dev/null "${auth[@]}" "http://127.0.0.1:$api/v1/listings?per_page=5"
  curl -s -o /dev/null "http://127.0.0.1:$api/healthz"
  curl -s -o /dev/null "http://127.0.0.1:$api/no/such/page"
done

# The value of an instant query's first result, or nothing.
query() {
  curl -s --get "http://127.0.0.1:$prom/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}
above_zero() { python3 -c 'import sys; sys.exit(0 if sys.argv[1] and float(sys.argv[1]) > 0 else 1)' "$1"; }

echo "-- querying Prometheus until it shows it all"
checks=(
  'up{job="rehome"} == 1'
  'sum by (route) (rehome_http_requests_total{route="/v1/listings/options", status="200"})'
  'sum by (route) (rehome_http_requests_total{route="unmatched", status="404"})'
  'rehome_webhook_deliveries_total{outcome="retried"}'
  'rehome_webhook_deliveries_total{outcome="dead"}'
  'sum(rehome_http_request_duration_seconds_count{route="/healthz"})'
  'rehome_build_info == 1'
)
pending=("${checks[@]}")
for _ in $(seq 90); do
  left=()
  for q in "${pending[@]}"; do
    above_zero "$(query "$q")" || left+=("$q")
  done
  pending=("${left[@]+"${left[@]}"}")
  [[ ${#pending[@]} -eq 0 ]] && break
  sleep 1
done
if [[ ${#pending[@]} -gt 0 ]]; then
  fail "Prometheus never showed: ${pending[*]}"
fi
for q in "${checks[@]}"; do echo "   $q = $(query "$q")"; done
echo "OK: Prometheus scraped rehome and sees its requests by route and its retried and dead deliveries"
