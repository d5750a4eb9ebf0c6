#!/usr/bin/env bash
# Generated clients that work the first time (issues 32, 49): the OpenAPI document a running
# `rehome serve --demo` publishes is linted by the real tools (Redocly's recommended rules,
# Spectral's OpenAPI rules with the OWASP API Security ruleset: zero errors, zero
# warnings), then a TypeScript client (openapi-typescript's Node API with its documented
# Blob transform, generate.mjs, + openapi-fetch, `tsc --strict`, no casts) and a Python
# client (openapi-python-client with no content-type configuration, no warning) are
# generated from it and each runs a scripted flow against the server: files uploaded by
# multipart and downloaded as files, every JSON answer validated against the document, and
# a webhook delivery against its `webhooks` entry (and verified with standardwebhooks).
#
#   tests/openapi/run.sh [REHOME_BINARY]   (default $CARGO_TARGET_DIR/debug/rehome)
#
# Needs node (20+) with `npm ci` run here, and `pip install -r tests/requirements.txt` (.ci/run
# does both).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
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
  [[ -f $work/serve.log ]] && tail -20 "$work/serve.log" >&2
  exit 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bin_dir="$here/node_modules/.bin"
[[ -x $bin_dir/spectral ]] || fail "run 'npm ci' in tests/openapi first"

port=$(free_port)
ops_token="ops-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
base="http://127.0.0.1:$port"
echo "-- rehome serve --demo on $base"
# The flow's webhook receiver listens on loopback over http; statements need entries past
# their settlement hold, so the hold is 0; the operator token runs the monthly remittance.
REHOME_DATABASE_URL="sqlite://$work/rehome.db" REHOME_MEDIA_DIR="$work/media" REHOME_ADDR="127.0.0.1:$port" \
  REHOME_OPS_TOKEN="$ops_token" REHOME_SETTLEMENT_HOLD_HOURS=0 REHOME_RATE_LIMIT=100000 \
  REHOME_ALLOW_PRIVATE_NETWORK=true REHOME_WEBHOOK_ALLOW_HTTP=true REHOME_WEBHOOK_POLL_MS=100 \
  "$bin" serve --demo >"$work/serve.out" 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null "$base/healthz" && break
  sleep 0.2
done
curl -sf -o /dev/null "$base/healthz" || fail "rehome did not start"
key=$(grep -oE 'rhk_[A-Za-z0-9]+' "$work/serve.out" | head -1)
[[ -n $key ]] || fail "no demo key in the output of serve --demo"

doc="$work/openapi.json"
curl -sf "$base/v1/openapi.json" -o "$doc" || fail "no /v1/openapi.json"

echo "-- redocly lint (recommended)"
"$bin_dir/redocly" lint --config "$here/redocly.yaml" --max-problems 50 "$doc" 2>&1 | grep -v '[║╔╚]' ||
  fail "redocly lint"
echo "-- spectral lint (spectral:oas + OWASP), failing on any warning"
"$bin_dir/spectral" lint --ruleset "$here/.spectral.yaml" --fail-severity warn "$doc" || fail "spectral lint"

echo "-- TypeScript client: openapi-typescript, tsc --noEmit --strict, then the flow"
ts="$work/ts"
mkdir -p "$ts"
cp "$here/flow.ts" "$here/generate.mjs" "$ts/"
ln -s "$here/node_modules" "$ts/node_modules"
echo '{"type": "module"}' >"$ts/package.json"
node "$ts/generate.mjs" "$doc" "$ts/schema.d.ts" || fail "openapi-typescript"
sheet="$work/listings.xlsx"
python3 "$here/flow.py" --make-sheet "$sheet" || fail "the flows' workbook"
compile=(--strict --target es2022 --module nodenext --moduleResolution nodenext --skipLibCheck false
  --typeRoots "$here/node_modules/@types" --types node "$ts/flow.ts")
"$bin_dir/tsc" --noEmit "${compile[@]}" || fail "tsc --noEmit --strict"
"$bin_dir/tsc" --outDir "$ts/out" "${compile[@]}" || fail "tsc"
REHOME_BASE="$base" REHOME_KEY="$key" REHOME_OPS_TOKEN="$ops_token" REHOME_RECORD="$work/ts-answers.jsonl" \
  REHOME_SHEET="$sheet" node "$ts/out/flow.js" ||
  fail "TypeScript flow"
python3 "$here/flow.py" --doc "$doc" --check-record "$work/ts-answers.jsonl" || fail "TypeScript answers"

echo "-- Python client: openapi-python-client, then the flow"
openapi-python-client generate --path "$doc" --config "$here/python-client.yaml" --meta none \
  --output-path "$work/py/rehome_client" >"$work/generate.log" 2>&1 || { cat "$work/generate.log"; fail "openapi-python-client"; }
if grep -E '^(WARNING|Unable|Cannot)' "$work/generate.log"; then
  fail "openapi-python-client warned"
fi
python3 "$here/flow.py" --doc "$doc" --base "$base" --key "$key" --ops-token "$ops_token" --client "$work/py" \
  --sheet "$sheet" ||
  fail "Python flow"
echo "-- ok"
