#!/usr/bin/env python3
"""Issue 34: the read path at size, against a small database of the same shape in the same sitting.

    python3 bench/scale.py seed --dir /tmp/rehome-scale                 # SQLite: 1,000,000 listings (one brand 500,000)
                                                                        # and the 100,000 baseline (one brand 50,000)
    python3 bench/scale.py seed --dir … --listings 2000000 --brands 2000 --big 1000000 \\
        --postgres postgres://postgres@127.0.0.1:55432/postgres --name scale2m
    python3 bench/scale.py run --dir …  [--postgres ADMIN_URL --name …] [--runs 3 --duration 10]
    python3 bench/scale.py drop --dir … [--postgres ADMIN_URL --name …]

`seed` writes the listings, one image each (a `done` import, so every page reads its cover),
and the brands' counts in SQL (a COPY on PostgreSQL), not through the API: only the brand,
its user, key and one template listing come from the CLI and the API. Big brand's listings:
1 in 10 draft, 1 in 100 closed, half clearance; 1 in 1,000 more are trashed (the sync walk
shows them; lists do not), so the big brand's live count is exactly `--big` and its page
`big / 100` at per_page 100 is its last full page. Titles draw from a few word lists and a
rare word (`heirloom`, 1 in 5,000); SKUs are `SKU-<brand>-<n>`.

`run` starts the release binary on each database (the baseline first) and runs with wrk
(64 connections, medians of `--runs`): a detail read of random big-brand listings, the first
page of 20 filtered by status and channel with its total, page 1 and the deep page at
per_page 100 (status=any), `q` searches (a rare word, a SKU, a common word) and a full sync
walk of the big brand (`updated_since` + cursor, one client, rows/s).
"""

import argparse
import http.client
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_bench as hb  # noqa: E402

ADJECTIVES = ["Oak", "Walnut", "Velvet", "Linen", "Leather", "Bouclé", "Rattan", "Marble", "Teak", "Ash",
              "Crème", "Grey", "Green", "Blue", "Mustard", "Pine", "Beech", "Cane", "Wool", "Cotton"]
NOUNS = ["sofa", "armchair", "bed frame", "dining table", "sideboard", "wardrobe", "desk", "stool", "bench",
         "floor lamp", "bookcase", "coffee table", "footstool", "chest of drawers", "mirror", "rug", "ottoman",
         "dresser", "cabinet", "console"]
EPOCH = datetime(2026, 11, 1, tzinfo=timezone.utc)


def stamp(seconds_before):
    return (EPOCH - timedelta(seconds=seconds_before)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def listing_rows(brands, listings, big, template):
    """(brand_id, status, channel, title, sku, quantity, created_at, updated_at, deleted_at) per listing;
    brands[0] is the big brand. The big brand gets `big` live listings and big/1000 trashed ones."""
    small = brands[1:]
    trashed = big // 1000
    total = listings + trashed
    for n in range(1, total + 1):
        if n <= big + trashed:
            brand = brands[0]
        else:
            brand = small[n % len(small)]
        status = "closed" if n % 100 == 0 else "draft" if n % 10 == 0 else "active"
        channel = "exchange" if n % 2 == 0 else "clearance"
        word = " heirloom" if n % 5000 == 7 else ""
        title = f"{ADJECTIVES[n % 20]} {NOUNS[(n // 20) % 20]}{word} #{n}"
        at = stamp(total - n)  # the newest last, one second apart
        deleted = at if (brand == brands[0] and n % 1000 == 500 and n <= trashed * 1000) else None
        quantity = 1 if channel == "exchange" else template["quantity"]
        yield brand, status, channel, title, f"SKU-{brand}-{n:08d}", quantity, at, at, deleted


VARIED = ["brand_id", "status", "channel", "title", "sku", "quantity", "created_at", "updated_at", "deleted_at"]


PASSWORD = "correct horse battery staple"


def create_brand(server, slug):
    """The big brand, its admin (who can also sign in to the dashboard) and an API key."""
    server.cli("brands", "create", slug, "--name", "The Big Sofa Company")
    user = server.cli("users", "create", "--brand", slug, "--name", "Scale", "--email", f"scale@{slug}.example")
    user_id = user.strip().splitlines()[-1]
    subprocess.run([server.binary, "users", "set-password", user_id], env=server.env(), input=PASSWORD + "\n",
                   check=True, capture_output=True, text=True)
    key = server.cli("keys", "create", "--user", user_id, "--rate-limit", "1000000000")
    return key.strip().splitlines()[-1]


def template_event(server, key):
    """One real, sealed webhook event of the big brand (a test event to an endpoint that is
    then paused), whose columns every seeded event copies."""
    hook = "/v1/partner/settings/integrations/webhook"
    hb_call(server.base, "PATCH", hook, key, {"url": "https://hooks.example/rehome", "enabled": True})
    hb_call(server.base, "POST", hook + "/test", key)
    hb_call(server.base, "PATCH", hook, key, {"enabled": False})


def hb_call(base, method, path, key, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = hb.urllib.request.Request(base + path, data=data, method=method,
                                    headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with hb.urllib.request.urlopen(req) as r:
        return r.read()


def seed_one(binary, workdir, db, data_key, brands, listings, big, events):
    """Seeds one database; returns its state (key, brand ids, sample ids)."""
    os.makedirs(workdir, exist_ok=True)
    server = hb.Server(binary, workdir, db, data_key)
    key = create_brand(server, "big")
    server.start()
    template_id = hb.post_json(server.base + "/v1/listings", key, hb.LISTING)["id"]
    template_event(server, key)
    server.stop()
    started = time.time()
    if server.postgres:
        state = seed_postgres(server, key, template_id, brands, listings, big)
    else:
        state = seed_sqlite(server, key, template_id, brands, listings, big)
    started_history = time.time()
    seed_history(server, state["big_id"], events)
    print(f"  ledger entries, billing and {events} delivered events in {time.time() - started_history:.0f} s",
          file=sys.stderr)
    state.update(db=db, data_key=data_key, key=key, listings=listings, big=big, brands=brands, events=events,
                 seed_seconds=round(time.time() - started, 1))
    print(f"seeded {db}: {listings} listings over {brands} brands (big {big}) in {state['seed_seconds']} s",
          file=sys.stderr)
    return state


def seed_sqlite(server, key, template_id, brands, listings, big, rows=listing_rows, varied=VARIED):
    """`rows` yields the `varied` columns of each listing (the rest are the template's)."""
    db = sqlite3.connect(server.db.removeprefix("sqlite://"), timeout=60)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = OFF")
    db.row_factory = sqlite3.Row
    template = dict(db.execute("SELECT * FROM listings WHERE id = ?", (template_id,)).fetchone())
    big_id = template["brand_id"]
    db.execute("INSERT INTO brands (slug, name, created_at) SELECT 'scale-' || value, 'Scale ' || value, created_at "
               "FROM brands, generate_series(1, ?) WHERE id = ?", (brands - 1, big_id)) if has_series(db) else \
        db.executemany("INSERT INTO brands (slug, name, created_at) SELECT ?, ?, created_at FROM brands WHERE id = ?",
                       [(f"scale-{n}", f"Scale {n}", big_id) for n in range(1, brands)])
    ids = [big_id] + [r[0] for r in db.execute("SELECT id FROM brands WHERE slug LIKE 'scale-%' ORDER BY id")]
    cols = [c for c in template if c != "id"]
    fixed = [template[c] for c in cols if c not in varied]
    fixed_cols = [c for c in cols if c not in varied]
    sql = (f"INSERT INTO listings ({', '.join(varied + fixed_cols)}) VALUES "
           f"({', '.join('?' for _ in varied + fixed_cols)})")
    batch = []
    for row in rows(ids, listings - 1, big - 1, template):
        batch.append(row + tuple(fixed))
        if len(batch) == 50_000:
            db.executemany(sql, batch)
            batch.clear()
    db.executemany(sql, batch)
    db.execute("INSERT INTO listing_images (listing_id, position, source_url, status, url, created_at, updated_at) "
               "SELECT id, 0, 'https://img.example/' || id || '.jpg', 'done', 'https://img.example/' || id || '.jpg', "
               "created_at, updated_at FROM listings WHERE id <> ?", (template_id,))
    # The brands' counts folded, as the server's folder leaves them.
    db.execute("CREATE TEMP TABLE folded AS SELECT brand_id, status, channel, SUM(live) AS live FROM listing_counts "
               "GROUP BY brand_id, status, channel")
    db.execute("DELETE FROM listing_counts")
    db.execute("INSERT INTO listing_counts (brand_id, status, channel, live) SELECT brand_id, status, channel, live FROM folded")
    db.commit()
    db.execute("ANALYZE")
    samples = [r[0] for r in db.execute("SELECT id FROM listings WHERE brand_id = ? AND deleted_at IS NULL "
                                        "ORDER BY random() LIMIT 1000", (big_id,))]
    sku = db.execute("SELECT sku FROM listings WHERE brand_id = ? AND deleted_at IS NULL ORDER BY id DESC "
                     "LIMIT 1 OFFSET 1000", (big_id,)).fetchone()[0]
    db.close()
    return {"big_id": big_id, "samples": samples, "sku": sku}


def has_series(db):
    try:
        db.execute("SELECT value FROM generate_series(1, 1)").fetchall()
        return True
    except sqlite3.OperationalError:
        return False


def seed_postgres(server, key, template_id, brands, listings, big, rows=listing_rows, varied=VARIED):
    psql = lambda sql: hb.psql(server.db, sql)  # noqa: E731
    template = json.loads(psql(f"SELECT row_to_json(l) FROM listings l WHERE id = {template_id}"))
    big_id = template["brand_id"]
    psql(f"INSERT INTO brands (slug, name, created_at) SELECT 'scale-' || n, 'Scale ' || n, created_at "
         f"FROM brands, generate_series(1, {brands - 1}) AS n WHERE id = {big_id}")
    ids = [big_id] + [int(i) for i in psql("SELECT id FROM brands WHERE slug LIKE 'scale-%' ORDER BY id").split()]
    cols = [c for c in template if c != "id" and c not in varied]
    # A bulk load: the listings' secondary indexes are dropped and built again afterwards, and
    # the COPY runs without triggers (the kept counts are written from the table at the end).
    indexes = psql("SELECT indexname || '|' || indexdef FROM pg_indexes WHERE tablename = 'listings' "
                   "AND indexname NOT LIKE '%pkey'").splitlines()
    for line in indexes:
        psql(f"DROP INDEX {line.split('|', 1)[0]}")
    copy = subprocess.Popen(["psql", server.db, "-q", "-v", "ON_ERROR_STOP=1", "-c",
                             f"\\copy listings ({', '.join(varied + cols)}) FROM STDIN WITH (FORMAT csv)"],
                            stdin=subprocess.PIPE, text=True,
                            env=dict(os.environ, PGOPTIONS="-c session_replication_role=replica"))
    import csv
    writer = csv.writer(copy.stdin)
    fixed = [template[c] if not isinstance(template[c], (dict, list)) else json.dumps(template[c]) for c in cols]
    for row in rows(ids, listings - 1, big - 1, template):
        writer.writerow(list(row) + fixed)
    copy.stdin.close()
    if copy.wait() != 0:
        raise RuntimeError("COPY failed")
    for line in indexes:
        psql(f"SET maintenance_work_mem = '1GB'; {line.split('|', 1)[1]}")
    psql(f"INSERT INTO listing_images (listing_id, position, source_url, status, url, created_at, updated_at) "
         f"SELECT id, 0, 'https://img.example/' || id || '.jpg', 'done', 'https://img.example/' || id || '.jpg', "
         f"created_at, updated_at FROM listings WHERE id <> {template_id}")
    psql("BEGIN; DELETE FROM listing_counts; INSERT INTO listing_counts (brand_id, status, channel, live) "
         "SELECT brand_id, status, channel, COUNT(*) FROM listings WHERE deleted_at IS NULL "
         "GROUP BY brand_id, status, channel; COMMIT")
    psql("VACUUM ANALYZE")
    samples = [int(i) for i in psql(f"SELECT id FROM listings WHERE brand_id = {big_id} AND deleted_at IS NULL "
                                    f"ORDER BY random() LIMIT 1000").split()]
    sku = psql(f"SELECT sku FROM listings WHERE brand_id = {big_id} AND deleted_at IS NULL ORDER BY id DESC "
               f"LIMIT 1 OFFSET 1000")
    return {"big_id": big_id, "samples": samples, "sku": sku}


def seed_history(server, big_id, events):
    """What a brand's history holds beside its listings (issue 34 item 1): a billing entity
    per brand; a ledger entry (a sale, available since September, not yet paid) for every
    tenth listing; and `events` delivered webhook events with one attempt each, half of
    them the big brand's, the rest spread over every brand. Every event copies the
    columns of the one real event (its sealed body opens only under its own id, so the seeded
    events' pages cannot show a payload; the lists do not read it)."""
    pg = server.postgres
    ts = (lambda t: f"'{t}'::timestamptz") if pg else (lambda t: f"'{t}'")
    now = ts("2026-11-01T00:00:00.000000Z")
    statements = [
        f"INSERT INTO billing_entities (brand_id, company_name, address_1, city, postcode, invoice_email, created_at, "
        f"updated_at) SELECT id, name || ' Ltd', '1 High Street', 'London', 'SW1A 1AA', "
        f"'accounts@' || slug || '.example', {now}, {now} FROM brands "
        f"WHERE id NOT IN (SELECT brand_id FROM billing_entities)",
        # Each entry's order: completed, delivered on 1 September.
        "INSERT INTO orders (id, brand_id, listing_id, channel, quantity, unit_price_pence, buyer_window_start, "
        "buyer_window_end, status, completed_at, created_at, title, delivery_contribution_gbp) "
        f"SELECT id, brand_id, id, 'clearance', 1, 45000, '2026-08-20', '2026-08-30', 'completed', "
        f"{ts('2026-09-01T10:00:00.000000Z')}, {ts('2026-08-18T10:00:00.000000Z')}, title, 30 "
        f"FROM listings WHERE id % 10 = 0",
        "INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence, "
        "commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at) "
        f"SELECT brand_id, 'sale', id, id, title, 1, 45000, 6750, 1350, 3000, 33900, "
        f"{ts('2026-09-01T10:00:00.000000Z')}, {ts('2026-09-03T10:00:00.000000Z')}, "
        f"{ts('2026-09-01T10:00:00.000000Z')} FROM listings WHERE id % 10 = 0",
    ]
    series = ("generate_series(1, {n}) AS g(n)" if pg else
              "(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {n}) SELECT n FROM s) AS g")
    n = "g.n"
    # One a second from 20 days ago: inside the retention window of delivered events (30
    # days by default), which would otherwise prune them as soon as a node starts.
    first = (datetime.now(timezone.utc) - timedelta(days=20)).strftime("%Y-%m-%dT%H:%M:%S")
    at = (f"(TIMESTAMPTZ '{first}Z' + {n} * INTERVAL '1 second')" if pg
          else f"(strftime('%Y-%m-%dT%H:%M:%S', '{first}', '+' || {n} || ' seconds') || '.000000Z')")
    if events:
        statements += [
            "CREATE TEMP TABLE brand_list AS SELECT ROW_NUMBER() OVER (ORDER BY id) - 1 AS k, id FROM brands",
            f"INSERT INTO webhook_endpoints (brand_id, url, enabled, signing_secret, secret_rotated_at, created_at, "
            f"updated_at) SELECT b.id, e.url, e.enabled, e.signing_secret, e.secret_rotated_at, e.created_at, "
            f"e.updated_at FROM brands b, webhook_endpoints e WHERE e.brand_id = {big_id} AND b.id <> {big_id}",
            "INSERT INTO webhook_events (id, brand_id, type, body, body_sealed, created_at, status, attempts, "
            "window_attempts, window_start, last_status_code, delivered_at) "
            f"SELECT 'evt_seed' || {n}, CASE WHEN {n} % 2 = 0 THEN {big_id} ELSE bl.id END, t.type, '', "
            f"t.body_sealed, {at}, 'delivered', 1, 1, {at}, 200, {at} "
            f"FROM {series.format(n=events)} JOIN brand_list bl ON bl.k = {n} % (SELECT COUNT(*) FROM brand_list), "
            f"(SELECT type, body_sealed FROM webhook_events WHERE brand_id = {big_id} ORDER BY seq LIMIT 1) t",
            "INSERT INTO webhook_attempts (event_seq, attempted_at, url, status_code, duration_ms, response_excerpt) "
            "SELECT seq, delivered_at, 'https://hooks.example/rehome', 200, 12, 'ok' FROM webhook_events "
            "WHERE id LIKE 'evt_seed%'",
        ]
    if pg:
        statements.append("SELECT setval(pg_get_serial_sequence('orders', 'id'), (SELECT MAX(id) FROM orders))")
        hb.psql(server.db, "BEGIN; SET session_replication_role = replica; " + "; ".join(statements) + "; COMMIT")
        hb.psql(server.db, "VACUUM ANALYZE")
        return
    db = sqlite3.connect(server.db.removeprefix("sqlite://"), timeout=60)
    db.execute("PRAGMA synchronous = OFF")
    for sql in statements:
        db.execute(sql)
    db.commit()
    db.execute("ANALYZE")
    db.close()


def databases(args):
    """(label, db url, brands, listings, big) of the baseline and the big database."""
    if args.postgres:
        base = args.postgres.rsplit("/", 1)[0]
        return [("100k", f"{base}/{args.name}_base", 100, 100_000, 50_000),
                (size_label(args.listings), f"{base}/{args.name}", args.brands, args.listings, args.big)]
    return [("100k", "sqlite://" + os.path.join(args.dir, "base", "bench.db"), 100, 100_000, 50_000),
            (size_label(args.listings), "sqlite://" + os.path.join(args.dir, "big", "bench.db"), args.brands,
             args.listings, args.big)]


def size_label(n):
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def state_path(args):
    return os.path.join(args.dir, f"state-{'pg-' + args.name if args.postgres else 'sqlite'}.json")


def seed(args, binary):
    os.makedirs(args.dir, exist_ok=True)
    states = {}
    for label, db, brands, listings, big in databases(args):
        workdir = os.path.join(args.dir, label if not args.postgres else f"pg-{label}")
        if args.postgres:
            name = db.rsplit("/", 1)[1]
            hb.psql(args.postgres, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            hb.psql(args.postgres, f"CREATE DATABASE {name}")
        else:
            workdir = os.path.dirname(db.removeprefix("sqlite://"))
            shutil.rmtree(workdir, ignore_errors=True)
        data_key = __import__("base64").b64encode(os.urandom(32)).decode()
        events = args.events if label != "100k" else 20_000
        states[label] = seed_one(binary, workdir, db, data_key, brands, listings, big, events)
        states[label]["workdir"] = workdir
    with open(state_path(args), "w") as f:
        json.dump(states, f)


class SlowStart(hb.Server):
    """A node whose start may run migrations over a big database: waits up to 30 minutes."""

    def wait_ready(self):
        deadline = time.time() + 1800
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited")
            try:
                with hb.urllib.request.urlopen(self.base + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("server did not become ready")


def rust_walk(walker, base, key, per_page=100):
    """The same walk by `examples/sync_walk.rs` (reqwest + serde_json): (rows, seconds, pages)."""
    out = subprocess.run([walker, base, key, str(per_page)], check=True, capture_output=True, text=True).stdout
    rows, secs, pages = out.split()
    return int(rows), float(secs), int(pages)


def walker_binary():
    """Builds the Rust walker (`cargo build --release --example sync_walk`) and returns its path."""
    subprocess.run(["cargo", "build", "--release", "--locked", "--example", "sync_walk"], cwd=hb.ROOT, check=True)
    return os.path.join(hb.target_dir(), "release", "examples", "sync_walk")


def sync_walk(base, key, per_page=100):
    """Walks the whole brand by cursor on one keep-alive connection; (rows, seconds, pages)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Authorization": f"Bearer {key}"}
    path = f"/v1/listings?updated_since=1970-01-01T00:00:00Z&per_page={per_page}"
    rows = pages = 0
    started = time.time()
    while True:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"sync page: {resp.status} {body[:200]!r}")
        page = json.loads(body)
        rows += len(page["data"])
        pages += 1
        if not page["meta"].get("has_more"):
            break
        path = f"/v1/listings?cursor={urllib.parse.quote(page['meta']['next_cursor'])}&per_page={per_page}"
    return rows, time.time() - started, pages


def one_by_one(server, path, key, n):
    """Median and worst of `n` requests in a row on one connection (ms): a figure for the
    scenarios wrk sees time out (its 2 s limit)."""
    url = urllib.parse.urlsplit(server.base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        resp = conn.getresponse()
        resp.read()
        times.append((time.perf_counter() - started) * 1000)
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status}")
    conn.close()
    return statistics.median(times), max(times)


def settled(db):
    """After each wrk run, a callable that waits until the node's PostgreSQL statements are
    done, cancelling those still running (wrk gives up on a request after 2 s; PostgreSQL
    would go on with it into the next scenario's measurement). None on SQLite."""
    if not db.startswith("postgres"):
        return None
    url = db.split("?", 1)[0]
    name = url.rsplit("/", 1)[1]

    def settle():
        for _ in range(100):
            running = hb.psql(url, "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                                   f"WHERE datname = '{name}' AND state = 'active' AND pid <> pg_backend_pid()")
            if running == "0":
                return
            time.sleep(0.1)
    return settle


def run(args, binary):
    report = {}
    only_walk = args.only is None or "walk" in args.only.split(",")
    walker = None if args.python_walk or not only_walk else (os.environ.get("REHOME_BENCH_WALKER") or walker_binary())
    for label, state in chosen_states(args):
        server = SlowStart(binary, state["workdir"], state["db"], state["data_key"])
        t0 = time.time()
        server.start()
        start_s = time.time() - t0
        key, big = state["key"], state["big"]
        deep = big // 100
        detail = hb.write_script(state["workdir"], "detail.lua",
                                 "local ids = {" + ",".join(map(str, state["samples"])) + "}\n"
                                 "request = function() return wrk.format('GET', '/v1/listings/' .. "
                                 "ids[math.random(#ids)]) end\n")
        sku_word = state["sku"].rsplit("-", 1)[1]
        scenarios = [
            ("detail", "/v1/listings/1", key, detail),
            ("first page of 20, active+clearance", "/v1/listings?status=active&channel=clearance&per_page=20", key),
            ("page 1, per_page 100, any", "/v1/listings?status=any&per_page=100", key),
            (f"page {deep}, per_page 100, any", f"/v1/listings?status=any&page={deep}&per_page=100", key),
            ("q=heirloom (rare word)", "/v1/listings?status=any&q=heirloom&per_page=20", key),
            (f"q={sku_word} (one SKU)", f"/v1/listings?status=any&q={sku_word}&per_page=20", key),
            ("q=sofa (common word)", "/v1/listings?status=any&q=sofa&per_page=20", key),
            (f"page {deep // 2} (the middle), per_page 100, any",
             f"/v1/listings?status=any&page={deep // 2}&per_page=100", key),
            ("q=zebra (no match)", "/v1/listings?status=any&q=zebra&per_page=20", key),
            ("q=1999 (about 140 matches)", "/v1/listings?status=any&q=1999&per_page=20", key),
            ("q=oak sofa (two words, 500 matches per 200,000)", "/v1/listings?status=any&q=oak%20sofa&per_page=20",
             key),
        ]
        only = set(args.only.split(",")) if args.only else None
        scenarios = [s for i, s in enumerate(scenarios) if only is None or str(i) in only]
        rss = []
        sampler_stop = threading.Event()

        def sample():
            while not sampler_stop.is_set():
                rss.append(server.rss_kib())
                time.sleep(1)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            print(f"== {label}: {state['db']} (start {start_s:.1f} s)", file=sys.stderr)
            for _, path, k, *_ in scenarios:  # one warm-up request each, and its answer checked
                one_by_one(server, f"/v1/listings/{state['samples'][0]}" if path == "/v1/listings/1" else path, k, 1)
            if args.single:
                for name, path, k, *_ in scenarios:
                    if path == "/v1/listings/1":
                        path = f"/v1/listings/{state['samples'][0]}"
                    median, worst = one_by_one(server, path, k, args.single)
                    print(f"| {label} | {name} | one at a time, {args.single} requests | median {median:.1f} ms "
                          f"| worst {worst:.1f} ms |")
                sys.stdout.flush()
                continue
            rows = hb.run_scenarios(server, scenarios, args.runs, args.duration, args.connections,
                                    after_each=settled(state["db"]))
            walks = []
            if only is None or "walk" in only:
                for i in range(args.runs):
                    if walker:
                        n, secs, pages = rust_walk(walker, server.base, key)
                    else:
                        n, secs, pages = sync_walk(server.base, key)
                    walks.append((n, secs, pages))
                    print(f"  run {i + 1} sync walk ({'rust' if walker else 'python'}): {n} rows in {pages} pages, "
                          f"{secs:.1f} s, {n / secs:.0f} rows/s", file=sys.stderr)
        finally:
            sampler_stop.set()
            sampler.join()
            server.stop()
        report[label] = {"rows": rows, "walks": walks, "rss_max_mib": max(rss) / 1024 if rss else 0,
                         "start_s": start_s}
        print(f"| {label} | scenario | req/s | p50 ms | p99 ms | non-2xx |")
        for r in rows:
            print(f"| {label} | {r['name']} | {r['rps']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['errors']} |")
        if walks:
            rates = [n / s for n, s, _ in walks]
            print(f"| {label} | sync walk (rows/s, median of {len(walks)}) | {statistics.median(rates):.0f} | | | |")
        print(f"{label}: peak RSS {report[label]['rss_max_mib']:.1f} MiB; start {start_s:.1f} s")
        sys.stdout.flush()


class Dashboard:
    """A signed-in dashboard session on one keep-alive connection (the big brand's admin)."""

    def __init__(self, base):
        url = urllib.parse.urlsplit(base)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        self.cookies = {}
        page = self.get("/dashboard/login")[1].decode()
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = urllib.parse.urlencode({"csrf": csrf, "email": "scale@big.example", "password": PASSWORD})
        status, _ = self.request("POST", "/dashboard/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 303:
            raise RuntimeError(f"dashboard sign-in answered {status}")

    def request(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        for header, value in resp.getheaders():
            if header.lower() == "set-cookie":
                name, rest = value.split("=", 1)
                self.cookies[name] = rest.split(";", 1)[0]
        return resp.status, data

    def get(self, path):
        return self.request("GET", path)


def chosen_states(args):
    """(label, state) of each seeded database, or only `--db`'s."""
    with open(state_path(args)) as f:
        states = json.load(f)
    return [(label, state) for label, state in states.items() if not args.db or label == args.db]


def started_node(binary, state):
    """A node serving a seeded database (its first start may migrate it at size)."""
    server = SlowStart(binary, state["workdir"], state["db"], state["data_key"])
    server.start()
    return server


def dashboard_pages(state):
    big = state["big"]
    sample = state["samples"][0]
    return [
        ("home", "/dashboard"),
        ("listings (page 1)", "/dashboard/listings"),
        (f"listings, last page", f"/dashboard/listings?status=any&page={big // 25}"),
        ("listings, q=heirloom", "/dashboard/listings?status=any&q=heirloom"),
        ("a listing", f"/dashboard/listings/{sample}"),
        ("deliveries (page 1)", "/dashboard/deliveries"),
        ("deliveries, any status, page 50", "/dashboard/deliveries?status=any&page=50"),
        ("wallet", "/dashboard/wallet"),
        ("collections", "/dashboard/collections"),
        ("redemptions", "/dashboard/redemptions"),
        ("team", "/dashboard/team"),
        ("integrations", "/dashboard/integrations"),
        ("audit log", "/dashboard/audit-log"),
        ("audit log, listings by one key", "/dashboard/audit-log?topic=listings&who=key%3A1"),
        ("audit log as CSV (10,000 newest)", "/dashboard/audit-log.csv"),
        ("wallet, sales of one month", "/dashboard/wallet?kind=sale&month=2026-10"),
        ("wallet entries as CSV", "/dashboard/wallet/entries.csv"),
        ("redemptions, codes not spent", "/dashboard/redemptions?state=not-spent"),
        ("redemptions as CSV", "/dashboard/redemptions.csv"),
        ("collections as CSV", "/dashboard/collections.csv"),
        ("search, a word", "/dashboard/search?q=heirloom"),
        ("search, an order number", "/dashboard/search?q=%23" + str(sample)),
        ("search, a code's last four", "/dashboard/search?q=XKD9"),
        ("settings", "/dashboard/settings"),
        ("bulk import", "/dashboard/bulk-import"),
        ("account", "/dashboard/account"),
    ]


def dashboard(args, binary):
    """Every dashboard page of the big brand, one request at a time on one connection:
    server time (request written to answer read, on loopback) median and worst of
    `--loads`, and the page's bytes. The /healthz round trip is the baseline."""
    for label, state in chosen_states(args):
        server = started_node(binary, state)
        try:
            session = Dashboard(server.base)
            print(f"| {label} | page | median ms | worst ms | bytes |")
            for name, path in [("GET /healthz (baseline)", "/healthz")] + dashboard_pages(state):
                status, body = session.get(path)  # warm-up, and its answer checked
                if status != 200:
                    raise RuntimeError(f"{path}: {status} {body[:300]!r}")
                times = []
                for _ in range(args.loads):
                    started = time.perf_counter()
                    session.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                print(f"| {label} | {name} | {statistics.median(times):.1f} | {max(times):.1f} | {len(body):,} |")
                sys.stdout.flush()
            print(f"{label}: RSS after the pages {server.rss_kib() / 1024:.1f} MiB")
        finally:
            server.stop()


def idle(args, binary):
    """Resident memory of a node started on each database and left idle for `--idle` s."""
    for label, state in chosen_states(args):
        server = started_node(binary, state)
        try:
            samples = []
            for _ in range(args.idle):
                time.sleep(1)
                samples.append(server.rss_kib() / 1024)
            # What the end's RSS is made of: the heap and stacks (anonymous) against the binary's
            # own pages mapped from the page cache (file-backed: shared and reclaimable).
            parts = {k: kib / 1024 for k, kib in server.status_kib("RssAnon", "RssFile", "RssShmem").items()}
            # Then woken: a readiness probe, a listing's detail and a page of 20, ten of each
            # (the node pages in what they run), and idle again for a second.
            first = None
            for n in range(10):
                for path in ("/readyz", f"/v1/listings/{state['samples'][0]}", "/v1/listings?per_page=20"):
                    started = time.perf_counter()
                    hb.get_json(server.base + path, state["key"])
                    first = first or (time.perf_counter() - started) * 1e3
            time.sleep(1)
            woken = server.rss_kib() / 1024
            print(f"| {label} | idle {args.idle} s | RSS at start {samples[0]:.1f} MiB | at the end {samples[-1]:.1f} MiB "
                  f"(anonymous {parts.get('RssAnon', 0):.1f}, file-backed {parts.get('RssFile', 0):.1f}, "
                  f"shared memory {parts.get('RssShmem', 0):.1f}) | peak {max(samples):.1f} MiB "
                  f"| after 30 requests {woken:.1f} MiB (the first {first:.1f} ms) |")
        finally:
            server.stop()


def remit(args, binary):
    """The month's remittance run over every brand of the big database (its ledger entries
    are available since September and unpaid), timed with /usr/bin/time: wall clock and peak
    resident memory. It pays the entries: seed again to run it again."""
    for label, state in chosen_states(args):
        env = dict(os.environ, REHOME_DATABASE_URL=state["db"], REHOME_DATA_KEY=state["data_key"], RUST_LOG="warn",
                   REHOME_SMTP_URL="smtp://127.0.0.1:9", REHOME_MAIL_FROM="noreply@rehome.example")
        out = subprocess.run(["/usr/bin/time", "-f", "%e %M", binary, "remittances", "run", "--as-of",
                              "2026-11-01T00:00:00Z"], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"remittance run failed: {out.stderr[-2000:]}")
        wall, rss_kb = out.stderr.strip().splitlines()[-1].split()
        print(f"| {label} | remittance run | {out.stdout.strip()[:80]} | {float(wall):.1f} s | "
              f"peak {int(rss_kb) / 1024:.1f} MiB |")


def drop(args):
    if args.postgres:
        for _, db, *_ in databases(args):
            hb.psql(args.postgres, f"DROP DATABASE IF EXISTS {db.rsplit('/', 1)[1]} WITH (FORCE)")
    shutil.rmtree(args.dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["seed", "run", "dashboard", "idle", "remit", "drop"])
    parser.add_argument("--dir", default="/tmp/rehome-scale")
    parser.add_argument("--postgres", metavar="ADMIN_URL")
    parser.add_argument("--name", default="rehome_scale", help="PostgreSQL database name")
    parser.add_argument("--listings", type=int, default=1_000_000)
    parser.add_argument("--brands", type=int, default=1000)
    parser.add_argument("--big", type=int, default=500_000)
    parser.add_argument("--events", type=int, default=1_000_000,
                        help="delivered webhook events in the big database (half the big brand's; 20,000 at 100k)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--single", type=int, default=0, metavar="N",
                        help="instead of wrk, N requests one at a time per scenario (median and worst)")
    parser.add_argument("--loads", type=int, default=20, help="dashboard: requests per page")
    parser.add_argument("--idle", type=int, default=30, help="idle: seconds to watch an idle node")
    parser.add_argument("--db", help="run on this database only: 100k, or the big one's label (1M, 2M…)")
    parser.add_argument("--only", help="comma-separated scenario numbers (0-10) and/or 'walk'")
    parser.add_argument("--python-walk", action="store_true",
                        help="walk with the Python client (parses each page with json.loads) instead of the Rust "
                             "one (examples/sync_walk.rs)")
    args = parser.parse_args()
    binary = os.environ.get("REHOME_BENCH_BINARY") or os.path.join(hb.target_dir(), "release", "rehome")
    if args.command == "seed":
        seed(args, binary)
    elif args.command == "run":
        run(args, binary)
    elif args.command == "dashboard":
        dashboard(args, binary)
    elif args.command == "idle":
        idle(args, binary)
    elif args.command == "remit":
        remit(args, binary)
    else:
        drop(args)


if __name__ == "__main__":
    main()
