#!/usr/bin/env python3
"""Load benchmarks of the rehome server with wrk, against a baseline in the same run.

Builds the release binary, creates a brand, admin and key with the rehome CLI on a fresh
SQLite database in a temp dir, starts the server, and runs each scenario several times,
interleaved with the /healthz baseline, reporting medians.

    python3 bench/http_bench.py                 # foundation scenario (options vs healthz)
    python3 bench/http_bench.py --runs 5 --duration 10
    python3 bench/http_bench.py bulk --runs 7     # bulk import of a 200-row .xlsx (no wrk needed)
    python3 bench/http_bench.py signin            # dashboard sign-in: one at a time, then with wrk
    python3 bench/http_bench.py integrators       # sync and q pages vs page 1; POST with/without Idempotency-Key
    python3 bench/http_bench.py creates           # POST /v1/listings by one brand and by many
    python3 bench/http_bench.py readpath [--postgres URL]
                                                  # issue 19: ratios against bench/baseline, a bare axum + sqlx server
    python3 bench/http_bench.py listings --postgres postgres://postgres@127.0.0.1:5432/postgres --nodes 2
                                                  # the same on a fresh PostgreSQL database, two nodes

REHOME_BENCH_BINARY (a rehome binary) and REHOME_BENCH_BASELINE (a built bench/baseline)
run other builds than this tree's, e.g. an older commit's for a before/after in one sitting.

Needs wrk (Debian package `wrk`). Only loopback addresses are used.
"""

import argparse
import contextlib
import http.client
import base64
import json
import os
import sqlite3
import threading
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
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


def fresh_postgres(admin_url):
    """Creates an empty database on the server of `admin_url`; returns its URL."""
    name = f"rehome_bench_{os.getpid()}_{time.time_ns()}"
    subprocess.run(["psql", admin_url, "-q", "-c", f"CREATE DATABASE {name}"], check=True)
    return admin_url.rsplit("/", 1)[0] + "/" + name


class Server:
    """One rehome node. `db` is a SQLite file in `workdir` unless a PostgreSQL URL is given;
    nodes on one PostgreSQL database share `data_key`."""

    def __init__(self, binary, workdir, db=None, data_key=None):
        self.binary = binary
        self.workdir = workdir
        self.db = db or "sqlite://" + os.path.join(workdir, "bench.db")
        self.data_key = data_key
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    @property
    def postgres(self):
        return self.db.startswith("postgres")

    def env(self):
        env = dict(os.environ, REHOME_DATABASE_URL=self.db)
        if self.data_key:
            env["REHOME_DATA_KEY"] = self.data_key
        return env

    def cli(self, *args):
        out = subprocess.run([self.binary, *args], env=self.env(), check=True, capture_output=True, text=True)
        return out.stdout

    def admin_key(self, slug, rate_limit=1_000_000_000):
        self.cli("brands", "create", slug, "--name", slug)
        user_id = self.cli("users", "create", "--brand", slug, "--name", "Bench", "--email", f"bench@{slug}.example").strip().splitlines()[-1]
        out = self.cli("keys", "create", "--user", user_id, "--rate-limit", str(rate_limit))
        return out.strip().splitlines()[-1]

    def start(self):
        env = dict(self.env(), RUST_LOG="warn", REHOME_MEDIA_DIR=os.path.join(self.workdir, "media"))
        self.proc = subprocess.Popen([self.binary, "serve", "--addr", f"127.0.0.1:{self.port}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()

    def wait_ready(self):
        """Waits (30 s at most) for /readyz to answer 200."""
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not become ready")

    def status_kib(self, *fields):
        """The named kB fields of the process's /proc/PID/status (VmRSS, VmHWM, RssAnon, …); 0 for one it lacks."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            found = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f) if k in fields}
        return {field: found.get(field, 0) for field in fields}

    def rss_kib(self):
        return self.status_kib("VmRSS")["VmRSS"]

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


def post_json(url, key, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def get_json(url, key):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


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


def wrk_nodes(nodes, path, key, connections, duration, script=None):
    """wrk against every node at once, the connections split between them: the summed
    throughput and the worst node's latencies."""
    if len(nodes) == 1:
        return wrk(nodes[0].base + path, key, connections=connections, duration=duration, script=script)
    out = [None] * len(nodes)

    def one(i):
        out[i] = wrk(nodes[i].base + path, key, connections=connections // len(nodes), duration=duration,
                     threads=1, script=script)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(nodes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"rps": sum(r["rps"] for r in out), "p50": max(r["p50"] for r in out),
            "p99": max(r["p99"] for r in out), "errors": sum(r["errors"] for r in out)}


def run_scenarios(server, scenarios, runs, duration, connections, after_each=None):
    """scenarios: list of (name, path, key) or (name, path, key, wrk lua script). Interleaves them run by run.
    With several nodes (server.nodes) every run loads all of them at once. `after_each`, if given, is
    called after every run (to let the server finish what wrk gave up on)."""
    nodes = getattr(server, "nodes", [server])
    results = {sc[0]: [] for sc in scenarios}
    for i in range(runs):
        for name, path, key, *script in scenarios:
            r = wrk_nodes(nodes, path, key, connections, duration, script=script[0] if script else None)
            results[name].append(r)
            if after_each:
                after_each()
            print(f"  run {i + 1} {name:<28} {r['rps']:>9.0f} req/s  p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms"
                  f"  non-2xx {r['errors']}", file=sys.stderr)
    return [summarise(sc[0], results[sc[0]]) for sc in scenarios]


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


LISTING = {"title": "Bench three-seater", "price_gbp": 450, "sale_price_gbp": 399.99, "condition": "excellent",
           "category": "3-Seater Sofas", "faults": ["None"], "exposed_to": ["None"], "channel": "clearance",
           "quantity": 3, "brand": "Loaf", "colour": "grey", "fabric": "linen", "delivery_contribution_gbp": 30,
           "description": "<p>A <strong>lovely</strong> sofa.</p>",
           "measurements": [{"type": "3-Seater", "w_cm": 210, "d_cm": 95, "h_cm": 85}]}


def seed_listings(server, brands, per_brand):
    """brands x per_brand listings: one per brand through the API, the rest copied in SQL
    with distinct titles, times (one minute apart), statuses (1 in 10 draft) and channels."""
    keys = [server.admin_key(f"brand-{b:03d}") for b in range(brands)]
    server.start()
    templates = [post_json(server.base + "/v1/listings", key, LISTING)["id"] for key in keys]
    if server.postgres:
        ids = seed_listings_postgres(server, templates, per_brand)
        settle_counts(server, brands)
        return keys, ids
    db = sqlite3.connect(server.db.removeprefix("sqlite://"), timeout=30)
    cols = [r[1] for r in db.execute("PRAGMA table_info(listings)") if r[1] != "id"]
    override = {
        "title": "title || ' #' || n",
        "created_at": "strftime('%Y-%m-%dT%H:%M:%S', 'now', '-' || n || ' minutes') || '.000000Z'",
        "updated_at": "strftime('%Y-%m-%dT%H:%M:%S', 'now', '-' || n || ' minutes') || '.000000Z'",
        "status": "CASE WHEN n % 10 = 0 THEN 'draft' ELSE 'active' END",
        "channel": "CASE WHEN n % 2 = 0 THEN 'exchange' ELSE 'clearance' END",
        "quantity": "CASE WHEN n % 2 = 0 THEN 1 ELSE quantity END",
    }
    select = ", ".join(override.get(c, c) for c in cols)
    for template in templates:
        db.execute(f"""WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
                       INSERT INTO listings ({", ".join(cols)}) SELECT {select} FROM listings, seq WHERE id = ?""",
                   (per_brand - 1, template))
    db.commit()
    total = db.execute("SELECT COUNT(*) FROM listings").fetchone()[0]
    plan = db.execute("EXPLAIN QUERY PLAN SELECT COUNT(*) FROM listings l WHERE brand_id = 1 AND status = 'active' "
                      "AND deleted_at IS NULL").fetchall()
    ids = [r[0] for r in db.execute("SELECT id FROM listings WHERE brand_id = (SELECT brand_id FROM listings "
                                    "WHERE id = ?) AND deleted_at IS NULL ORDER BY random() LIMIT 1000",
                                    (templates[0],))]
    db.close()
    print(f"seeded {total} listings in {brands} brands; count plan: {[p[-1] for p in plan]}", file=sys.stderr)
    settle_counts(server, brands)
    return keys, ids


def settle_counts(server, brands):
    """Waits for the server's count folder (every 5 s) to fold the seed's one-per-listing rows
    of listing_counts into a row per (brand, status), then, on PostgreSQL, vacuums the table:
    a measurement of the steady state rather than of the minute after a 100,000-row load,
    while the folded rows' dead index entries wait for autovacuum (the first run after
    seeding measured a page of 20 at half its steady rate)."""
    def rows():
        if server.postgres:
            return int(psql(server.db, "SELECT COUNT(*) FROM listing_counts"))
        with contextlib.closing(sqlite3.connect(server.db.removeprefix("sqlite://"), timeout=30)) as db:
            return db.execute("SELECT COUNT(*) FROM listing_counts").fetchone()[0]
    deadline = time.time() + 120
    while (left := rows()) > 4 * brands:
        if time.time() > deadline:
            print(f"warning: {left} count rows still unfolded", file=sys.stderr)
            break
        time.sleep(1)
    if server.postgres:
        psql(server.db, "VACUUM ANALYZE listing_counts")


def psql(url, sql):
    out = subprocess.run(["psql", url, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def seed_listings_postgres(server, templates, per_brand):
    """As seed_listings, in PostgreSQL's dialect."""
    cols = psql(server.db, "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM "
                           "information_schema.columns WHERE table_name = 'listings' AND column_name <> 'id'").split(",")
    override = {
        "title": "title || ' #' || n",
        "created_at": "now() - n * interval '1 minute'",
        "updated_at": "now() - n * interval '1 minute'",
        "status": "CASE WHEN n % 10 = 0 THEN 'draft' ELSE 'active' END",
        "channel": "CASE WHEN n % 2 = 0 THEN 'exchange' ELSE 'clearance' END",
        "quantity": "CASE WHEN n % 2 = 0 THEN 1 ELSE quantity END",
    }
    select = ", ".join(override.get(c, c) for c in cols)
    ids = ",".join(map(str, templates))
    psql(server.db, f"INSERT INTO listings ({', '.join(cols)}) SELECT {select} FROM listings, "
                    f"generate_series(1, {per_brand - 1}) AS n WHERE id IN ({ids}); ANALYZE")
    total = psql(server.db, "SELECT COUNT(*) FROM listings")
    ids = psql(server.db, f"SELECT string_agg(id::text, ',') FROM (SELECT id FROM listings WHERE brand_id = "
                          f"(SELECT brand_id FROM listings WHERE id = {templates[0]}) AND deleted_at IS NULL "
                          f"ORDER BY random() LIMIT 1000) t")
    print(f"seeded {total} listings in {len(templates)} brands (PostgreSQL)", file=sys.stderr)
    return [int(i) for i in ids.split(",")]


def write_script(workdir, name, text):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def sample_rss(server, seconds, every, out):
    end = time.time() + seconds
    while time.time() < end:
        out.append(server.rss_kib())
        time.sleep(every)


def listings(server, args):
    keys, ids = seed_listings(server, brands=100, per_brand=1000)
    for node in server.nodes[1:]:
        node.start()
    detail = write_script(server.workdir, "detail.lua",
                          "local ids = {" + ",".join(map(str, ids)) + "}\n"
                          "request = function() return wrk.format('GET', '/v1/listings/' .. ids[math.random(#ids)]) end\n")
    create = write_script(server.workdir, "create.lua",
                          "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
                          f"wrk.body = [[{json.dumps(LISTING)}]]\n")
    time.sleep(1)
    rows = run_scenarios(server, [("GET /healthz (baseline)", "/healthz", None),
                                  ("GET /v1/listings?per_page=100", "/v1/listings?per_page=100", keys[0]),
                                  ("GET /v1/listings/{id}", "/v1/listings/1", keys[0], detail),
                                  ("POST /v1/listings", "/v1/listings", keys[1], create)],
                         args.runs, args.duration, args.connections)
    print_table(rows, "GET /healthz (baseline)")
    samples = []
    sampler = threading.Thread(target=sample_rss, args=(server, 60, 5, samples))
    sampler.start()
    soak = wrk(server.base + "/v1/listings/1", keys[0], connections=args.connections, duration=60, script=detail)
    sampler.join()
    print()
    print(f"60 s soak of GET /v1/listings/{{id}}: {soak['rps']:.0f} req/s, p99 {soak['p99']:.2f} ms; "
          f"RSS every 5 s (MiB): {' '.join(f'{s / 1024:.1f}' for s in samples)}")


def xlsx_bytes(rows):
    """A minimal .xlsx as Excel writes it: shared strings for text, numbers as numbers."""
    import io
    import zipfile
    from xml.sax.saxutils import escape
    strings, index = [], {}

    def cell(ref, value):
        if isinstance(value, (int, float)):
            return f'<c r="{ref}"><v>{value}</v></c>'
        if value not in index:
            index[value] = len(strings)
            strings.append(value)
        return f'<c r="{ref}" t="s"><v>{index[value]}</v></c>'

    def col(i):
        return chr(ord("A") + i) if i < 26 else "A" + chr(ord("A") + i - 26)

    body = "".join(f'<row r="{r + 1}">' + "".join(cell(f"{col(c)}{r + 1}", v) for c, v in enumerate(row) if v != "")
                   + "</row>" for r, row in enumerate(rows))
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook {ns} xmlns:r="{rel}"><sheets><sheet name="Listings" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<worksheet {ns}><dimension ref="A1:{col(len(rows[0]) - 1)}{len(rows)}"/><sheetData>{body}</sheetData></worksheet>',
        "xl/sharedStrings.xml": f'<sst {ns} count="{len(strings)}" uniqueCount="{len(strings)}">'
        + "".join(f"<si><t>{escape(s)}</t></si>" for s in strings) + "</sst>",
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return out.getvalue()


BULK_COLUMNS = ["title", "price_gbp", "category", "condition", "brand", "colour", "fabric", "age_years", "faults",
                "exposed_to", "quantity", "delivery_contribution_gbp", "sale_price_gbp", "rrp_gbp", "available_from",
                "measurements", "description", "sku"]


def bulk_rows(count):
    """`count` full rows: what LISTING says, as a partner's sheet holds it (the date as an Excel serial)."""
    rows = [BULK_COLUMNS]
    for i in range(count):
        rows.append([f"Bench three-seater {i}", 450, "3-Seater Sofas", "excellent", "Loaf", "grey", "linen",
                     "2 years old", "None", "None", 3, 30, 399.99, 1200, 46357, "3-Seater:210x95x85",
                     "<p>A <strong>lovely</strong> sofa.</p>", f"SKU-{i:05d}"])
    return rows


def hwm_kib(server):
    return server.status_kib("VmHWM")["VmHWM"]


def timed_post(conn, path, key, body):
    data = json.dumps(body).encode()
    started = time.perf_counter()
    conn.request("POST", path, body=data, headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status not in (200, 201):
        raise RuntimeError(f"{path} answered {response.status}: {payload[:300]!r}")
    return elapsed, json.loads(payload)


def bulk(server, args):
    """bulk-validate and bulk-commit of a 200-row .xlsx against 200 single creates, interleaved run by run."""
    import base64
    import http.client
    key = server.admin_key("bench-brand")
    server.start()
    rows = bulk_rows(200)
    workbook = xlsx_bytes(rows)
    body = {"file_b64": base64.b64encode(workbook).decode()}
    singles = [dict(LISTING, title=row[0], sku=row[17], available_from="2026-12-01") for row in rows[1:]]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    for _ in range(3):  # warm-up: connection, caches, page cache of the database
        timed_post(conn, "/v1/listings/bulk-validate", key, body)
    time.sleep(0.5)
    rss_idle, hwm_idle = server.rss_kib(), hwm_kib(server)
    times = {"validate": [], "commit": [], "singles": []}
    hwm = {}
    for i in range(args.runs):
        ms, report = timed_post(conn, "/v1/listings/bulk-validate", key, body)
        assert report["row_count"] == 200 and report["error_count"] == 0, report
        times["validate"].append(ms)
        hwm.setdefault("validate", hwm_kib(server))
        ms, report = timed_post(conn, "/v1/listings/bulk-commit", key, body)
        assert report["success_count"] == 200, report
        times["commit"].append(ms)
        hwm.setdefault("commit", hwm_kib(server))
        started = time.perf_counter()
        for single in singles:
            timed_post(conn, "/v1/listings", key, single)
        times["singles"].append((time.perf_counter() - started) * 1000)
        print(f"  run {i + 1}: validate {times['validate'][-1]:.1f} ms, commit {times['commit'][-1]:.1f} ms, "
              f"200 single creates {times['singles'][-1]:.1f} ms", file=sys.stderr)
    conn.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"file: {len(rows) - 1} rows x {len(BULK_COLUMNS)} columns, {len(workbook)} bytes .xlsx "
          f"({len(body['file_b64'])} bytes base64)")
    print("| operation | median ms | min ms | max ms | vs 200 single creates |")
    print("|---|---:|---:|---:|---:|")
    for name, label in [("validate", "POST /v1/listings/bulk-validate (200 rows)"),
                        ("commit", "POST /v1/listings/bulk-commit (200 rows)"),
                        ("singles", "200 x POST /v1/listings, one keep-alive connection")]:
        print(f"| {label} | {med[name]:.1f} | {min(times[name]):.1f} | {max(times[name]):.1f} | "
              f"{100 * med[name] / med['singles']:.0f}% |")
    print()
    print(f"Server memory: idle {rss_idle / 1024:.1f} MiB RSS (peak so far {hwm_idle / 1024:.1f} MiB); peak after the first "
          f"validate {hwm['validate'] / 1024:.1f} MiB, after the first commit {hwm['commit'] / 1024:.1f} MiB, "
          f"after all runs {hwm_kib(server) / 1024:.1f} MiB; RSS at the end {server.rss_kib() / 1024:.1f} MiB")


SIGNIN_PASSWORD = "bench-password-0123456789"
# A well-formed double-submit token: the same value in the cookie and the form (decisions 9.2).
SIGNIN_CSRF = "B" * 43


def signin_body(email):
    return urllib.parse.urlencode({"email": email, "password": SIGNIN_PASSWORD, "csrf": SIGNIN_CSRF})


def timed_sign_in(base, email):
    """One dashboard sign-in (POST /dashboard/login with the right password): its status and
    wall time in ms, measured from the request to the 303 answer."""
    conn = http.client.HTTPConnection(base.split("//", 1)[1], timeout=10)
    started = time.perf_counter()
    conn.request("POST", "/dashboard/login", body=signin_body(email),
                 headers={"Content-Type": "application/x-www-form-urlencoded",
                          "Cookie": f"rehome_csrf={SIGNIN_CSRF}"})
    response = conn.getresponse()
    response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    return response.status, elapsed


def signin(server, args):
    """Dashboard sign-in: sequential attempts (the time one sign-in costs, Argon2id included),
    then wrk at a few connection counts (how many sign-ins per second the machine sustains),
    each round with the /healthz baseline."""
    slug = "bench-brand"
    server.cli("brands", "create", slug, "--name", slug)
    email = f"bench@{slug}.example"
    user_id = server.cli("users", "create", "--brand", slug, "--name", "Bench", "--email", email).strip().splitlines()[-1]
    subprocess.run([server.binary, "users", "set-password", user_id], env=server.env(), input=SIGNIN_PASSWORD + "\n",
                   check=True, capture_output=True, text=True)
    server.start()
    time.sleep(1)
    for _ in range(3):
        timed_sign_in(server.base, email)
    times = []
    for _ in range(40):
        status, ms = timed_sign_in(server.base, email)
        if status != 303:
            sys.exit(f"sign-in answered {status}")
        times.append(ms)
    times.sort()
    print(f"Sequential sign-ins (40, one at a time): median {statistics.median(times):.1f} ms, "
          f"p90 {times[int(len(times) * 0.9)]:.1f} ms, min {times[0]:.1f} ms")
    script = write_script(server.workdir, "signin.lua",
                          'wrk.method = "POST"\n'
                          f'wrk.body = "{signin_body(email)}"\n'
                          'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n'
                          f'wrk.headers["Cookie"] = "rehome_csrf={SIGNIN_CSRF}"\n')
    scenarios = [("GET /healthz (baseline)", "/healthz", None)]
    for c in (1, 2, 4, 8):
        scenarios.append((f"POST /dashboard/login, {c} conn", c))
    results = {name: [] for name, *_ in scenarios}
    for i in range(args.runs):
        for name, *rest in scenarios:
            if rest[0] == "/healthz":
                r = wrk(server.base + "/healthz", connections=args.connections, duration=args.duration)
            else:
                r = wrk(server.base + "/dashboard/login", connections=rest[0], duration=args.duration,
                        threads=1, script=script)
            results[name].append(r)
            print(f"  run {i + 1} {name:<32} {r['rps']:>9.1f} req/s  p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms"
                  f"  non-2xx/3xx {r['errors']}", file=sys.stderr)
    print_table([summarise(name, results[name]) for name, *_ in scenarios], "GET /healthz (baseline)")


def integrators(server, args):
    """Issue 17's costs on 100 brands x 1,000 listings: a word search against the first
    page, and POST /v1/listings with a fresh Idempotency-Key on every request against the
    same POST without one."""
    keys, _ = seed_listings(server, brands=100, per_brand=1000)
    time.sleep(1)
    create = write_script(server.workdir, "create.lua",
                          "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
                          f"wrk.body = [[{json.dumps(LISTING)}]]\n")
    # Each wrk thread numbers its requests; the prefix (load time) keeps runs apart.
    keyed = write_script(server.workdir, "create_keyed.lua",
                         "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
                         f"wrk.body = [[{json.dumps(LISTING)}]]\n"
                         "local threads = 0\n"
                         "function setup(thread) threads = threads + 1; thread:set('tid', threads) end\n"
                         "local prefix = tostring(os.time()) .. '-' .. tostring(math.random(1, 1000000000))\n"
                         "local n = 0\n"
                         "request = function()\n"
                         "  n = n + 1\n"
                         "  wrk.headers['Idempotency-Key'] = 'bench-' .. prefix .. '-' .. tostring(tid) .. '-' .. n\n"
                         "  return wrk.format()\n"
                         "end\n")
    # A sync page in the middle of a walk: the cursor after the walk's first 500 listings.
    walk = "/v1/listings?updated_since=1970-01-01T00:00:00Z&per_page=100"
    cursor = None
    for _ in range(5):
        page = get_json(server.base + (walk if cursor is None else f"/v1/listings?cursor={cursor}&per_page=100"), keys[0])
        cursor = page["meta"]["next_cursor"]
    rows = run_scenarios(server, [("GET /healthz (baseline)", "/healthz", None),
                                  ("GET /v1/listings?page=1&per_page=100", "/v1/listings?page=1&per_page=100", keys[0]),
                                  ("GET /v1/listings?updated_since=…&per_page=100 (first sync page)", walk, keys[0]),
                                  ("GET /v1/listings?cursor=…&per_page=100 (sixth sync page)",
                                   f"/v1/listings?cursor={cursor}&per_page=100", keys[0]),
                                  ("GET /v1/listings?q=sofa&per_page=100", "/v1/listings?q=sofa&per_page=100", keys[0]),
                                  ("POST /v1/listings", "/v1/listings", keys[1], create),
                                  ("POST /v1/listings + Idempotency-Key", "/v1/listings", keys[2], keyed)],
                         args.runs, args.duration, args.connections)
    print_table(rows, "GET /healthz (baseline)")


def creates(server, args):
    """POST /v1/listings by 64 connections of one brand (its changes queue on the brand's
    listing clock for their commits) and spread over 32 brands (a key picked at random per
    request), on 32 brands x 1,000 listings."""
    keys, _ = seed_listings(server, brands=32, per_brand=1000)
    time.sleep(1)
    body = f"wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\nwrk.body = [[{json.dumps(LISTING)}]]\n"
    one = write_script(server.workdir, "create_one.lua", body)
    many = write_script(server.workdir, "create_many.lua", body +
                        "local keys = {" + ", ".join(f"'{k}'" for k in keys) + "}\n"
                        "request = function()\n"
                        "  wrk.headers['Authorization'] = 'Bearer ' .. keys[math.random(#keys)]\n"
                        "  return wrk.format()\n"
                        "end\n")
    rows = run_scenarios(server, [("GET /healthz (baseline)", "/healthz", None),
                                  ("POST /v1/listings, one brand", "/v1/listings", keys[0], one),
                                  ("POST /v1/listings, 32 brands", "/v1/listings", None, many)],
                         args.runs, args.duration, args.connections)
    print_table(rows, "GET /healthz (baseline)")


def build_baseline():
    """The bare axum + sqlx server of bench/baseline (its own crate, built only here), or
    the binary REHOME_BENCH_BASELINE names."""
    if os.environ.get("REHOME_BENCH_BASELINE"):
        return os.environ["REHOME_BENCH_BASELINE"]
    manifest = os.path.join(ROOT, "bench", "baseline", "Cargo.toml")
    subprocess.run(["cargo", "build", "--release", "--locked", "--manifest-path", manifest], check=True,
                   env=dict(os.environ, CARGO_TARGET_DIR=target_dir()))
    return os.path.join(target_dir(), "release", "rehome-bench-baseline")


def readpath(server, args):
    """Issue 19: rehome's read path as ratios of a bare server on the same stack and the same
    database, measured in one run: fixed bytes vs /healthz, a one-row read vs a listing's
    detail, and a page of 20 vs the detail. 100 brands x 1,000 listings."""
    baseline_binary = build_baseline()
    keys, ids = seed_listings(server, brands=100, per_brand=1000)
    # The bare server twice: its pools as rehome opens them (a connection checked only after
    # 30 s idle), and with sqlx's default (a ping before every use), for comparison.
    bare = subprocess.Popen([baseline_binary, f"127.0.0.1:{free_port()}", server.db], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    bare_default = subprocess.Popen([baseline_binary, f"127.0.0.1:{free_port()}", server.db],
                                    env=dict(os.environ, BASELINE_SQLX_DEFAULTS="1"),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bare_base = "http://127.0.0.1:" + bare.args[1].rsplit(":", 1)[1]
    bare_default_base = "http://127.0.0.1:" + bare_default.args[1].rsplit(":", 1)[1]
    try:
        for base in (bare_base, bare_default_base):
            deadline = time.time() + 30
            while True:
                try:
                    with urllib.request.urlopen(base + "/fixed", timeout=1):
                        break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError("the baseline server did not start")
                    time.sleep(0.05)
        table = "local ids = {" + ",".join(map(str, ids)) + "}\n"
        bare_detail = write_script(server.workdir, "bare.lua", table +
                                   "request = function() return wrk.format('GET', '/listings/' .. ids[math.random(#ids)]) end\n")
        detail = write_script(server.workdir, "detail.lua", table +
                              "request = function() return wrk.format('GET', '/v1/listings/' .. ids[math.random(#ids)]) end\n")
        scenarios = [
            ("bare: fixed bytes", bare_base, "/fixed", None, None),
            ("rehome: GET /healthz", server.base, "/healthz", None, None),
            ("bare: one-row read", bare_base, "/listings/1", None, bare_detail),
            ("bare: one-row read, sqlx default pool", bare_default_base, "/listings/1", None, bare_detail),
            ("rehome: GET /v1/listings/{id}", server.base, "/v1/listings/1", keys[0], detail),
            ("rehome: GET /v1/listings?per_page=20", server.base, "/v1/listings?per_page=20", keys[0], None),
            ("rehome: GET /v1/listings/options", server.base, "/v1/listings/options", keys[0], None),
        ]
        time.sleep(1)
        results = {name: [] for name, *_ in scenarios}
        for i in range(args.runs):
            for name, base, path, key, script in scenarios:
                r = wrk(base + path, key, connections=args.connections, duration=args.duration, script=script)
                results[name].append(r)
                print(f"  run {i + 1} {name:<40} {r['rps']:>9.0f} req/s  p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms"
                      f"  non-2xx {r['errors']}", file=sys.stderr)
        rows = {name: summarise(name, runs) for name, runs in results.items()}
        ratio_of = {"rehome: GET /healthz": "bare: fixed bytes", "rehome: GET /v1/listings/{id}": "bare: one-row read",
                    "bare: one-row read, sqlx default pool": "bare: one-row read",
                    "rehome: GET /v1/listings?per_page=20": "rehome: GET /v1/listings/{id}"}
        # Ratios run by run (each side measured minutes apart at most), then their median:
        # steadier on a shared machine than the ratio of two medians taken across runs.
        print(f"| scenario | req/s (median of {args.runs}) | ratio (median of the runs' ratios) | p50 ms | p99 ms"
              " | non-2xx |")
        print("|---|---:|---|---:|---:|---:|")
        for name, *_ in scenarios:
            r = rows[name]
            against = ratio_of.get(name)
            ratio = ""
            if against:
                per_run = [a["rps"] / b["rps"] for a, b in zip(results[name], results[against])]
                ratio = f"{statistics.median(per_run):.2f} of {against} ({', '.join(f'{x:.2f}' for x in per_run)})"
            print(f"| {name} | {r['rps']:.0f} | {ratio} | {r['p50']:.2f} | {r['p99']:.2f} | {r['errors']} |")
    finally:
        for process in (bare, bare_default):
            process.terminate()
            process.wait(timeout=10)


SCENARIOS = {"foundation": foundation, "listings": listings, "bulk": bulk, "signin": signin, "integrators": integrators,
             "creates": creates, "readpath": readpath}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?", default="foundation", choices=sorted(SCENARIOS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    parser.add_argument("--postgres", metavar="ADMIN_URL",
                        help="run on a fresh database of this PostgreSQL server instead of SQLite")
    parser.add_argument("--nodes", type=int, default=1, help="server processes on the one database (PostgreSQL)")
    args = parser.parse_args()
    if args.nodes > 1 and not args.postgres:
        sys.exit("several nodes need --postgres")
    if not shutil.which("wrk") and args.scenario != "bulk":
        sys.exit("wrk is needed: apt-get install wrk")
    binary = os.environ.get("REHOME_BENCH_BINARY") or (
        os.path.join(target_dir(), "release", "rehome") if args.no_build else build())
    workdir = tempfile.mkdtemp(prefix="rehome-bench-")
    if args.postgres:
        db, key = fresh_postgres(args.postgres), base64.b64encode(os.urandom(32)).decode()
        server = Server(binary, workdir, db, key)
        server.nodes = [server] + [Server(binary, workdir, db, key) for _ in range(args.nodes - 1)]
    else:
        server = Server(binary, workdir)
        server.nodes = [server]
    try:
        print(f"machine: {os.cpu_count()} cores; {args.runs} runs x {args.duration}s, {args.connections} connections, "
              f"wrk 2 threads on the same machine", file=sys.stderr)
        SCENARIOS[args.scenario](server, args)
    finally:
        for node in server.nodes:
            node.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        if args.postgres:
            # The bench's own database; it held nothing but seeded data.
            name = server.db.rsplit("/", 1)[1]
            subprocess.run(["psql", args.postgres, "-q", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"])


if __name__ == "__main__":
    main()
