#!/usr/bin/env python3
"""The remittance run at scale, and statement rendering (issue 16).

Seeds a fresh database with BRANDS brands (made with the rehome CLI, each with a billing
entity and an invoice email) and ENTRIES available ledger entries per brand (inserted by
SQL: the run reads only the ledger, the brands and their billing), then times
`rehome remittances run` with mail on (each statement's PDF rendered and queued in its
transaction) under /usr/bin/time (wall clock and peak resident memory). Each run gets a
freshly seeded database; medians of --runs. Then serves the last database and times
GET /v1/remittances/{id}/statement.pdf (and .csv, and the JSON) of a ENTRIES-line statement,
median of --loads sequential requests.

    python3 bench/wallet_bench.py --no-build                       # 100 x 1000 and 10 x 1000 on SQLite
    python3 bench/wallet_bench.py --no-build --postgres postgres://postgres@127.0.0.1:55432/postgres
"""

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import build, free_port, fresh_postgres, target_dir  # noqa: E402

DELIVERED = "2026-09-01T10:00:00.000000Z"
AVAILABLE = "2026-09-03T10:00:00.000000Z"


def cli(binary, env, *args):
    out = subprocess.run([binary, *args], env=env, check=True, capture_output=True, text=True)
    return out.stdout


def seed(binary, url, brands, entries):
    env = dict(os.environ, REHOME_DATABASE_URL=url, RUST_LOG="warn")
    for b in range(1, brands + 1):
        cli(binary, env, "brands", "create", f"brand{b}", "--name", f"Brand {b}")
    rows = [
        (b, (b - 1) * entries + i, f"Oak frame sofa, delivered to customer {i}", DELIVERED, AVAILABLE)
        for b in range(1, brands + 1)
        for i in range(1, entries + 1)
    ]
    insert = """INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence,
                    commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at)
                SELECT id, 'sale', {order}, 1, {title}, 1, 45000, 6750, 1350, 3000, 33900, {delivered}, {available},
                       {delivered}
                FROM brands WHERE slug = {slug}"""
    billing = """INSERT INTO billing_entities (brand_id, company_name, address_1, city, postcode, invoice_email,
                    created_at, updated_at)
                 SELECT id, 'Brand ' || id || ' Ltd', '1 High Street', 'London', 'SW1A 1AA',
                        'accounts@' || slug || '.example', {now}, {now} FROM brands WHERE slug LIKE 'brand%'"""
    if url.startswith("postgres"):
        sql = [
            # The ledger's order and listing references are not what is measured.
            "SET session_replication_role = replica;",
            billing.format(now="now()") + ";",
            f"""INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence,
                    commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at)
                SELECT b.id, 'sale', (b.id - 1) * {entries} + i, 1, 'Oak frame sofa, delivered to customer ' || i, 1,
                       45000, 6750, 1350, 3000, 33900, '{DELIVERED}', '{AVAILABLE}', '{DELIVERED}'
                FROM brands b, generate_series(1, {entries}) i WHERE b.slug LIKE 'brand%';""",
            "ANALYZE;",
        ]
        subprocess.run(["psql", url.split("?")[0], "-q", "-c", "\n".join(sql)], check=True)
        return
    path = url.removeprefix("sqlite://")
    db = sqlite3.connect(path)  # foreign keys off: the orders and listings are not seeded
    db.execute(billing.format(now="'2026-09-01T00:00:00.000000Z'"))
    ids = dict(db.execute("SELECT slug, id FROM brands"))
    db.executemany(
        """INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence,
               commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at)
           VALUES (?, 'sale', ?, 1, ?, 1, 45000, 6750, 1350, 3000, 33900, ?, ?, ?)""",
        [(ids[f"brand{b}"], order, title, d, a, d) for (b, order, title, d, a) in rows],
    )
    db.commit()
    db.close()


def timed_run(binary, url):
    env = dict(
        os.environ,
        REHOME_DATABASE_URL=url,
        RUST_LOG="warn",
        REHOME_SMTP_URL="smtp://127.0.0.1:9",
        REHOME_MAIL_FROM="noreply@rehome.example",
    )
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", binary, "remittances", "run"], env=env, check=True, capture_output=True, text=True
    )
    wall, rss_kb = out.stderr.strip().splitlines()[-1].split()
    issued = int(out.stdout.split()[1])
    return float(wall), int(rss_kb) / 1024, issued


def fresh_url(args, tmp, n):
    if args.postgres:
        return fresh_postgres(args.postgres)
    return f"sqlite://{os.path.join(tmp, f'wallet{n}.db')}"


def scenario(binary, args, tmp, brands, entries):
    walls, peaks = [], []
    url = None
    for n in range(args.runs):
        url = fresh_url(args, tmp, f"{brands}x{entries}-{n}")
        seed(binary, url, brands, entries)
        wall, peak, issued = timed_run(binary, url)
        assert issued == brands, f"issued {issued} statements for {brands} brands"
        walls.append(wall)
        peaks.append(peak)
        print(f"  {brands} brands x {entries} entries: run {wall:.2f} s, peak {peak:.1f} MiB", flush=True)
    print(
        f"{brands} x {entries} ({brands * entries} lines): median {statistics.median(walls):.2f} s, "
        f"peak RSS median {statistics.median(peaks):.1f} MiB"
    )
    return url


def render_times(binary, url, loads):
    env = dict(os.environ, REHOME_DATABASE_URL=url, RUST_LOG="warn")
    user = cli(binary, env, "users", "create", "--brand", "brand1", "--name", "Bench", "--email", "b@brand1.example")
    user_id = user.strip().splitlines()[-1]
    key = cli(binary, env, "keys", "create", "--user", user_id, "--rate-limit", "100000").strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [binary, "serve", "--addr", f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/healthz")
                break
            except OSError:
                time.sleep(0.05)

        def get(path):
            req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {key}"})
            with urllib.request.urlopen(req) as r:
                return r.read()

        import json

        remittance = json.loads(get("/v1/remittances"))["data"][0]["id"]
        for suffix in ["/statement.pdf", "/statement.csv", ""]:
            times, size = [], 0
            for _ in range(loads):
                start = time.perf_counter()
                size = len(get(f"/v1/remittances/{remittance}{suffix}"))
                times.append((time.perf_counter() - start) * 1000)
            print(
                f"GET statement{suffix or ' (JSON)'}: median {statistics.median(times):.1f} ms over {loads}, "
                f"{size} bytes"
            )
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--postgres")
    args = parser.parse_args()
    binary = os.path.join(target_dir(), "release", "rehome") if args.no_build else build()
    with tempfile.TemporaryDirectory() as tmp:
        scenario(binary, args, tmp, 10, args.entries)
        url = scenario(binary, args, tmp, 100, args.entries)
        render_times(binary, url, args.loads)


if __name__ == "__main__":
    main()
