#!/usr/bin/env bash
# Seconds `cargo build --bin rehome` (dev profile, incremental) takes after a one-line
# change in a handler: a string of `src/http/health.rs` is changed, the binary built and
# timed, the file restored; three times. Run it in two checkouts alternately (e.g. a
# `git worktree` of the commit before a change) with one CARGO_TARGET_DIR, nothing else
# running:
#
#   CARGO_TARGET_DIR=$PWD/target bench/incremental_build.sh CHECKOUT
set -euo pipefail
cd "$1"
file=src/http/health.rs
cargo build --bin rehome >/dev/null 2>&1
for i in 1 2 3; do
  cp "$file" "$file.bak"
  sed -i "s/\"status\":\"ok\"}/\"status\":\"ok$i\"}/" "$file"
  grep -q "ok$i" "$file" || { mv "$file.bak" "$file"; echo "no line changed in $file" >&2; exit 1; }
  start=$(date +%s.%N)
  cargo build --bin rehome >/dev/null 2>&1
  end=$(date +%s.%N)
  mv "$file.bak" "$file"
  echo "run $i: $(echo "$end - $start" | bc) s"
done
cargo build --bin rehome >/dev/null 2>&1
