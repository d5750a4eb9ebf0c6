#!/usr/bin/env python3
"""Load benchmarks of the rehome server with wrk, against a baseline in the same run.

Builds the release binary, creates a brand, admin and key with the rehome CLI on a fresh
SQLite database in a temp dir, starts the server, and runs each scenario several times,
interleaved with the /healthz baseline, reporting medians.

    python3 bench/http_bench.py                 # foundation scenario (options vs healthz)
    python3 bench/http_bench.py --runs 5 --duration 10

Needs wrk (Debian package `wrk`). Only loopback addresses are used.
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def build():
    subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    return os.path.join(target_dir(), "release", "rehome")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.db = "sqlite://" + os.path.join(workdir, "bench.db")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def cli(self, *args):
        env = dict(os.environ, REHOME_DATABASE_URL=self.db)
        out = subprocess.run([self.binary, *args], env=env, check=True, capture_output=True, text=True)
        return out.stdout

    def admin_key(self, slug, rate_limit=1_000_000_000):
        self.cli("brands", "create", slug, "--name", slug)
        user_id = self.cli("users", "create", "--brand", slug, "--name", "Bench", "--email", f"bench@{slug}.example").strip().splitlines()[-1]
        out = self.cli("keys", "create", "--user", user_id, "--rate-limit", str(rate_limit))
        return out.strip().splitlines()[-1]

    def start(self):
        env = dict(os.environ, REHOME_DATABASE_URL=self.db, RUST_LOG="warn",
                   REHOME_MEDIA_DIR=os.path.join(self.workdir, "media"))
        self.proc = subprocess.Popen([self.binary, "serve", "--addr", f"127.0.0.1:{self.port}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not become ready")

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def parse_latency(text, pct):
    m = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(url, key=None, connections=64, duration=10, threads=2, script=None):
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency"]
    if key:
        cmd += ["-H", f"Authorization: Bearer {key}"]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return {"rps": rps, "p50": parse_latency(out, 50), "p99": parse_latency(out, 99),
            "errors": int(non2xx.group(1)) if non2xx else 0}


def summarise(name, runs):
    med = lambda k: statistics.median(r[k] for r in runs)
    return {"name": name, "rps": med("rps"), "p50": med("p50"), "p99": med("p99"),
            "errors": sum(r["errors"] for r in runs), "runs": len(runs)}


def run_scenarios(server, scenarios, runs, duration, connections):
    """scenarios: list of (name, path, key). Interleaves them run by run."""
    results = {name: [] for name, _, _ in scenarios}
    for i in range(runs):
        for name, path, key in scenarios:
            r = wrk(server.base + path, key, connections=connections, duration=duration)
            results[name].append(r)
            print(f"  run {i + 1} {name:<28} {r['rps']:>9.0f} req/s  p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms"
                  f"  non-2xx {r['errors']}", file=sys.stderr)
    return [summarise(name, results[name]) for name, _, _ in scenarios]


def print_table(rows, baseline):
    base = next(r for r in rows if r["name"] == baseline)
    print(f"| scenario | req/s (median) | vs {baseline} | p50 ms | p99 ms | non-2xx |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['rps']:.0f} | {100 * r['rps'] / base['rps']:.0f}% | {r['p50']:.2f} | {r['p99']:.2f} | {r['errors']} |")


def foundation(server, args):
    key = server.admin_key("bench-brand")
    server.start()
    time.sleep(1)
    idle_before = server.rss_kib()
    rows = run_scenarios(server, [("GET /healthz (baseline)", "/healthz", None),
                                  ("GET /v1/listings/options", "/v1/listings/options", key)],
                         args.runs, args.duration, args.connections)
    time.sleep(2)
    idle_after = server.rss_kib()
    print_table(rows, "GET /healthz (baseline)")
    print()
    print(f"Idle resident memory: {idle_before / 1024:.1f} MiB after start, {idle_after / 1024:.1f} MiB after the load")


SCENARIOS = {"foundation": foundation}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?", default="foundation", choices=sorted(SCENARIOS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    binary = os.path.join(target_dir(), "release", "rehome") if args.no_build else build()
    workdir = tempfile.mkdtemp(prefix="rehome-bench-")
    server = Server(binary, workdir)
    try:
        print(f"machine: {os.cpu_count()} cores; {args.runs} runs x {args.duration}s, {args.connections} connections, "
              f"wrk 2 threads on the same machine", file=sys.stderr)
        SCENARIOS[args.scenario](server, args)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
