#!/usr/bin/env bash
# Instructions per request of one build on four paths (callgrind, bench/instructions.sh):
# `/healthz`, a listing's detail, a page of 20 with its total, and a write (PATCH of a
# listing's price), each on a fresh SQLite database made the same way: a brand, an admin
# with a key without a rate limit, 40 listings created through the API. Run it for the
# build before a refactor and the one after in one sitting, alternating:
#
#   bench/boundary_cost.sh BINARY [PORT]
set -euo pipefail
bin=$(realpath "$1")
port=${2:-18511}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export REHOME_DATABASE_URL="sqlite://$work/bench.db" RUST_LOG=warn REHOME_MEDIA_DIR="$work/media"
"$bin" brands create cost --name Cost >/dev/null
user=$("$bin" users create --brand cost --name Bench --email bench@cost.example | tail -1)
key=$("$bin" keys create --user "$user" --rate-limit 1000000000 | tail -1)
base="http://127.0.0.1:$port"
"$bin" serve --addr "127.0.0.1:$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf -o /dev/null "$base/readyz" && break; sleep 0.1; done
body='{"title":"Bench three-seater","price_gbp":450,"sale_price_gbp":399.99,"condition":"excellent","category":"3-Seater Sofas","faults":["None"],"exposed_to":["None"],"channel":"clearance","quantity":3,"brand":"Loaf","colour":"grey","fabric":"linen","delivery_contribution_gbp":30,"description":"<p>A sofa.</p>","measurements":[{"type":"3-Seater","w_cm":210,"d_cm":95,"h_cm":85}]}'
id=
for _ in $(seq 40); do
  id=$(curl -sf -X POST "$base/v1/listings" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
done
kill "$server"; wait "$server" 2>/dev/null || true
cat >"$work/get.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $key"
LUA
cat >"$work/patch.lua" <<LUA
wrk.method = "PATCH"
wrk.body = '{"price_gbp": 450}'
wrk.headers["Authorization"] = "Bearer $key"
wrk.headers["Content-Type"] = "application/json"
LUA
run() {
  local what=$1 url=$2 script=${3:-}
  local out
  out=$("$here/instructions.sh" "$url" ${script:+"$script"} -- "$bin" serve --addr "127.0.0.1:$port" 2>/dev/null)
  echo "$what  $out" | sed 's/  profile .*//'
}
run "GET /healthz" "$base/healthz"
run "GET /v1/listings/$id" "$base/v1/listings/$id" "$work/get.lua"
run "GET /v1/listings?per_page=20" "$base/v1/listings?per_page=20" "$work/get.lua"
run "PATCH /v1/listings/$id" "$base/v1/listings/$id" "$work/patch.lua"
