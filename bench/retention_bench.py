#!/usr/bin/env python3
"""The retention job's cost on a table of a million old rows (issue 36).

Seeds a fresh database (SQLite in a temp dir, or a new database on a PostgreSQL server)
with ROWS sign-in failures two to three days old (past the default 24-hour window) and a
few live ones, then:

1. baseline: a server whose retention job will not run for hours; wrk reads
   (`GET /v1/listings`) and writes (`POST /v1/listings`) at once for DURATION seconds;
2. prune: a server whose job runs a second after start; the same wrk load meanwhile. The
   job's own log line gives the rows deleted, the statements (batches), the longest
   statement (the longest it held SQLite's write lock, or its row locks, at once) and the
   whole run's time; the wrk figures show whether requests kept answering.

    python3 bench/retention_bench.py                     # SQLite, 1,000,000 rows
    python3 bench/retention_bench.py --postgres postgres://postgres@127.0.0.1:5432/postgres
    python3 bench/retention_bench.py --rows 100000 --duration 10 --no-build

Needs wrk; on PostgreSQL, psql. Only loopback addresses are used.
"""

import argparse
import base64
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_bench as hb  # noqa: E402  (the shared server, wrk and psql helpers)

LIVE_ROWS = 10


class LoggingServer(hb.Server):
    """A node whose log (JSON lines) goes to a file, with extra environment."""

    def __init__(self, *args, extra_env=None, log_name="server.log", **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_env = extra_env or {}
        self.log_path = os.path.join(self.workdir, log_name)

    def start(self):
        env = dict(self.env(), RUST_LOG="info,sqlx=warn", REHOME_LOG_FORMAT="json",
                   REHOME_MEDIA_DIR=os.path.join(self.workdir, "media"), **self.extra_env)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([self.binary, "serve", "--addr", f"127.0.0.1:{self.port}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.wait_ready()

    def stop(self):
        super().stop()
        if getattr(self, "log", None):
            self.log.close()

    def retention_runs(self):
        """The fields of each 'retention run done' line logged so far."""
        runs = []
        with open(self.log_path) as f:
            for line in f:
                if "retention run done" in line:
                    runs.append(flatten(json.loads(line)))
        return runs


def flatten(value, into=None):
    into = {} if into is None else into
    for k, v in value.items():
        if isinstance(v, dict):
            flatten(v, into)
        else:
            into[k] = v
    return into


def seed_sqlite(path, rows):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    # The stored form of an instant: RFC 3339 with six fraction digits and Z.
    db.execute(f"""
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
        INSERT INTO sign_in_failures (account_key, ip, at)
        SELECT printf('%064x', i), '10.' || (i / 65536 % 256) || '.' || (i / 256 % 256) || '.' || (i % 256),
               strftime('%Y-%m-%dT%H:%M:%f', 'now', '-2 days', '-' || (i % 86400) || ' seconds') || '000Z'
        FROM n""")
    for i in range(LIVE_ROWS):
        db.execute("INSERT INTO sign_in_failures (account_key, ip, at) VALUES "
                   "(?, '192.0.2.1', strftime('%Y-%m-%dT%H:%M:%f', 'now', '-1 minutes') || '000Z')", (f"live{i}",))
    db.commit()
    count = db.execute("SELECT COUNT(*) FROM sign_in_failures").fetchone()[0]
    db.close()
    return count


def seed_postgres(url, rows):
    hb.psql(url, f"""
        INSERT INTO sign_in_failures (account_key, ip, at)
        SELECT md5(i::text) || md5(i::text), '10.' || (i / 65536 % 256) || '.' || (i / 256 % 256) || '.' || (i % 256),
               now() - interval '2 days' - (i % 86400) * interval '1 second'
        FROM generate_series(1, {rows}) AS i;
        INSERT INTO sign_in_failures (account_key, ip, at)
        SELECT 'live' || i, '192.0.2.1', now() - interval '1 minute' FROM generate_series(1, {LIVE_ROWS}) AS i""")
    hb.psql(url, "VACUUM ANALYZE sign_in_failures")  # not inside the INSERTs' transaction
    return int(hb.psql(url, "SELECT COUNT(*) FROM sign_in_failures"))


def remaining(server):
    if server.postgres:
        return int(hb.psql(server.db, "SELECT COUNT(*) FROM sign_in_failures"))
    db = sqlite3.connect(server.db.removeprefix("sqlite://"))
    count = db.execute("SELECT COUNT(*) FROM sign_in_failures").fetchone()[0]
    db.close()
    return count


def load(server, key, duration, workdir):
    """wrk reading and writing at once; each 1 thread x 8 connections."""
    post = hb.write_script(workdir, "post.lua", "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
                                                f"wrk.body = [[{json.dumps(hb.LISTING)}]]\n")
    procs = {}
    for name, path, script in [("read", "/v1/listings?per_page=20", None), ("write", "/v1/listings", post)]:
        cmd = ["wrk", "-t1", "-c8", f"-d{duration}s", "--timeout", "10s", "--latency",
               "-H", f"Authorization: Bearer {key}"]
        if script:
            cmd += ["-s", script]
        procs[name] = subprocess.Popen(cmd + [server.base + path], stdout=subprocess.PIPE, text=True)
    results = {}
    for name, proc in procs.items():
        out, _ = proc.communicate()
        non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
        timeouts = re.search(r"timeout (\d+)", out)
        results[name] = {
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": hb.parse_latency(out, 50), "p99": hb.parse_latency(out, 99),
            "max": max_latency(out),
            "errors": int(non2xx.group(1)) if non2xx else 0, "timeouts": int(timeouts.group(1)) if timeouts else 0,
        }
    return results


def max_latency(out):
    m = re.search(r"^\s*Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", out, re.M)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def show(label, results):
    for name, r in results.items():
        print(f"{label:9} {name:5}: {r['rps']:8.0f} req/s  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms  "
              f"max {r['max']:7.1f} ms  non-2xx {r['errors']}  timeouts {r['timeouts']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--duration", type=int, default=30, help="seconds of wrk load in each phase")
    parser.add_argument("--batch", type=int, default=1000, help="REHOME_RETENTION_BATCH")
    parser.add_argument("--pause-ms", type=int, default=10, help="REHOME_RETENTION_PAUSE_MS")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="a fresh database on this server instead of SQLite")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    binary = os.environ.get("REHOME_BENCH_BINARY") or (
        os.path.join(hb.target_dir(), "release", "rehome") if args.no_build else hb.build())
    workdir = tempfile.mkdtemp(prefix="rehome-retention-")
    db = hb.fresh_postgres(args.postgres) if args.postgres else None
    data_key = base64.b64encode(os.urandom(32)).decode() if args.postgres else None
    common = {"REHOME_RETENTION_BATCH": str(args.batch), "REHOME_RETENTION_PAUSE_MS": str(args.pause_ms)}
    idle = LoggingServer(binary, workdir, db, data_key, log_name="baseline.log",
                         extra_env=dict(common, REHOME_RETENTION_INTERVAL_S="86400"))
    pruning = LoggingServer(binary, workdir, idle.db, data_key, log_name="prune.log",
                            extra_env=dict(common, REHOME_RETENTION_INTERVAL_S="4"))
    try:
        key = idle.admin_key("bench")  # the CLI migrates the new database
        started = time.time()
        seeded = seed_postgres(idle.db, args.rows) if idle.postgres else \
            seed_sqlite(idle.db.removeprefix("sqlite://"), args.rows)
        print(f"{'PostgreSQL' if idle.postgres else 'SQLite'}: seeded {seeded} sign-in failures "
              f"({args.rows} two to three days old) in {time.time() - started:.1f} s; "
              f"batch {args.batch}, pause {args.pause_ms} ms; {os.cpu_count()} cores, wrk on the same machine")

        idle.start()
        show("baseline", load(idle, key, args.duration, workdir))
        idle.stop()
        assert remaining(idle) == seeded, "the baseline server pruned: its job should not have run"

        pruning.start()  # its job runs about a second after start, during the load
        during = load(pruning, key, args.duration, workdir)
        deadline = time.time() + 600
        while not pruning.retention_runs() and time.time() < deadline:
            time.sleep(0.5)
        pruning.stop()
        show("pruning", during)
        for run in pruning.retention_runs():
            print(f"retention run: deleted {run.get('deleted')} ({run.get('tables')}) in {run.get('batches')} "
                  f"statements, longest {run.get('longest_batch_ms')} ms, whole run {run.get('elapsed_ms')} ms, "
                  f"complete {run.get('complete')}")
        print(f"left: {remaining(pruning)} rows (the {LIVE_ROWS} live ones expected)")
    finally:
        idle.stop()
        pruning.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        if args.postgres:
            name = idle.db.rsplit("/", 1)[1]
            subprocess.run(["psql", args.postgres, "-q", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"])


if __name__ == "__main__":
    main()
