#!/usr/bin/env python3
"""Issue 46 item 5: the storefront's costs at size, against a 100k database of the same shape
measured in the same sitting, interleaved run by run.

    python3 bench/storefront.py seed --dir /tmp/rehome-storefront            # SQLite: 100k and 1M listings
    python3 bench/storefront.py seed --dir … --postgres ADMIN_URL --name sf   # PostgreSQL: the same (…_base and sf)
        [--listings 10000000 --brands 10000 --big 1000000]
    python3 bench/storefront.py run --dir … [--postgres ADMIN_URL --name sf] [--runs 3 --duration 10] [--single 20]
                                            [--only 0,3,4]
    python3 bench/storefront.py plans --dir … [--postgres ADMIN_URL --name sf] [--db 1M] [--loads 10] [--only 3,5]
    python3 bench/storefront.py stats --dir … [--analyze]     # SQLite: drop the planner's statistics, or ANALYZE again
    python3 bench/storefront.py checkout --dir … [--postgres ADMIN_URL --name sf] [--runs 3 --duration 10] [--single 20]
                                            [--buyers 200 --units 20 --last 12 --bursts 3] [--stock 100000]
    python3 bench/storefront.py drop --dir … [--postgres ADMIN_URL --name sf]

`seed` is bench/scale.py's (the big brand, its user, key and one template listing from the
CLI and the API; every other brand and listing written in SQL, a COPY on PostgreSQL; 1 in 10
of the big brand's listings draft, 1 in 100 closed, half clearance; titles from 20 × 20 words,
`heirloom` in 1 in 5,000), with what the storefront reads varied per listing: the category
(the taxonomy's 8), the condition (4), the regular price (£50–£3,000) and a sale price on 1
in 3. Each listing has one image, a `done` import of a photo whose thumbnails are made (the
catalogue's cover and the page's `srcset` come from it). The facet counts (`market_counts`)
are folded in SQL before the first node starts (SQLite: the triggers' rows grouped; PostgreSQL,
whose COPY runs without triggers: counted from the table), as the folder task would leave them;
`run` checks before measuring that nothing is left to fold and that the kept total is the
catalogue's.

`run` starts one node on each of the two databases at once (the 100k baseline and the big one)
with `REHOME_MARKETPLACE_RATE_LIMIT=100000000` (the per-address limit still runs on every
request) and runs wrk (`-t2 -c64`, `--latency`) scenario by scenario, each scenario on the
baseline and then on the big database, run by run: medians of `--runs` of req/s, p50 and p99.
Scenarios: a listing page (1,000 random listings on sale, of every brand; a visitor whose view
was counted, as wrk sends no User-Agent and the warm-up counted it), the same with a new
visitor on every request (each view counted: a write), the same answered 304 (If-None-Match
with each page's ETag), the catalogue's first page with its facets, `q` (a rare word, a common
word), a category, a channel, a price range, `sort=price_asc`, the deepest page (100), and
the big brand's page. The 1-minute load average and whether another build (rustc) was
running are recorded with every run. `--single N` adds N requests one at a time per scenario
(median and worst ms): the server's time without queueing.

`plans` starts a node that logs every statement with its time (`RUST_LOG=sqlx::query=debug`),
requests each scenario `--loads` times one at a time, and lists the statements each scenario ran
with their median and worst time as the node measured them; on SQLite with their plans, from
EXPLAIN QUERY PLAN of the statement as prepared by the SQLite the server links (bench/sqlite_plan.c,
built against libsqlite3-sys's bundled amalgamation: the system's `sqlite3` shell is an older
SQLite whose planner can choose another plan for the same statement).

`checkout` (issue 47's figures) starts the same two nodes and measures buying from a listing's
page, `POST /marketplace/listings/{id}/checkout` with the anti-forgery token of one GET of a
listing page (the form's `csrf` field and the `rehome_checkout` cookie: the same token for every
buyer on a given day). (a) Bursts: a clearance listing of `--units` (20) made through the API,
`--buyers` (200) buyers each on its own connection, connected first and then released at once:
exactly `--units` orders (303) and every other buyer the 409 page with its sentence, checked
against the database (the listing's orders, its stock 0 and status closed); then `--last` (12)
buyers at once on a listing's last unit: one order. (b) Under load: wrk (`-t2 -c64`, a Lua
script that POSTs the form, quantity 1, and counts 303s against other answers) on one clearance
listing whose stock is set by SQL to `--stock` (100,000, above the API's 10,000 so that no
run can sell it out: a 409 would be cheaper than an order) before each run; medians of
`--runs`; the orders written are checked against the 303s. `--single N`: N checkouts one at
a time. The confirmation mail is queued only when mail is configured (REHOME_SMTP_URL and
REHOME_MAIL_FROM); the bench's nodes have none, and the mail outbox is checked to stay as it was.

`stats` drops SQLite's planner statistics (`sqlite_stat1`; the server never runs ANALYZE, so a
database it created has none) or writes them again (`--analyze`, as `seed` leaves them).
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_bench as hb  # noqa: E402
import scale  # noqa: E402

CATEGORIES = ["Corner Sofas", "3-Seater Sofas", "2-Seater Sofas", "Sofa Beds", "Armchairs", "Footstools", "Sofa Sets",
              "Other"]
CONDITIONS = ["like-new", "excellent", "gently-used", "fair"]
VARIED = scale.VARIED + ["category", "condition", "regular_price_pence", "sale_price_pence"]
RATE_LIMIT = "100000000"


def storefront_rows(brands, listings, big, template):
    """scale.py's rows, with a category, a condition and prices drawn per listing (seeded, so
    every seed writes the same catalogue)."""
    rng = random.Random(46)
    for row in scale.listing_rows(brands, listings, big, template):
        regular = rng.randrange(50, 3001) * 100
        sale = (regular * rng.randrange(60, 95) // 100) if rng.randrange(3) == 0 else None
        yield row + (rng.choice(CATEGORIES), rng.choice(CONDITIONS), regular, sale)


VISIBLE = "deleted_at IS NULL AND status = 'active' AND quantity > 0"


def photos_sql(pg):
    """One photo per seeded image, its thumbnails made, and the image pointing at it."""
    return [
        "INSERT INTO photos (id, brand_id, source, name, mime, filename, byte_size, width, height, thumb_status, "
        "medium_name, large_name, created_at, updated_at) "
        "SELECT i.id, l.brand_id, 'import', 'seed' || i.id || '.jpg', 'image/jpeg', 'sofa.jpg', 250000, 1600, 1200, "
        "'done', 'seed' || i.id || '-m.jpg', 'seed' || i.id || '-l.jpg', l.created_at, l.created_at "
        "FROM listing_images i JOIN listings l ON l.id = i.listing_id WHERE i.attachment_id IS NULL",
        "UPDATE listing_images SET attachment_id = id WHERE attachment_id IS NULL",
    ] + (["SELECT setval(pg_get_serial_sequence('photos', 'id'), (SELECT MAX(id) FROM photos))"] if pg else [])


# The facet counts as the folder leaves them: one row per (brand, category, condition,
# channel), and the same under brand 0 (every brand's).
FOLD_MARKET = [
    "CREATE TEMP TABLE folded_market AS SELECT brand_id, category, condition, channel, SUM(live) AS live "
    "FROM market_counts GROUP BY brand_id, category, condition, channel",
    "DELETE FROM market_counts",
    "INSERT INTO market_counts (brand_id, category, condition, channel, live) "
    "SELECT brand_id, category, condition, channel, live FROM folded_market WHERE live <> 0",
    "DROP TABLE folded_market",
]
COUNT_MARKET = [
    "DELETE FROM market_counts",
    "INSERT INTO market_counts (brand_id, category, condition, channel, live) "
    f"SELECT brand_id, category, condition, channel, COUNT(*) FROM listings WHERE {VISIBLE} "
    "GROUP BY brand_id, category, condition, channel",
    "INSERT INTO market_counts (brand_id, category, condition, channel, live) "
    f"SELECT 0, category, condition, channel, COUNT(*) FROM listings WHERE {VISIBLE} "
    "GROUP BY category, condition, channel",
]


def seed_one(binary, workdir, db, data_key, brands, listings, big):
    os.makedirs(workdir, exist_ok=True)
    server = hb.Server(binary, workdir, db, data_key)
    key = scale.create_brand(server, "big")
    server.start()
    template_id = hb.post_json(server.base + "/v1/listings", key, hb.LISTING)["id"]
    server.stop()
    started = time.time()
    seeder = scale.seed_postgres if server.postgres else scale.seed_sqlite
    state = seeder(server, key, template_id, brands, listings, big, rows=storefront_rows, varied=VARIED)
    if server.postgres:
        hb.psql(db, "BEGIN; " + "; ".join(photos_sql(True) + COUNT_MARKET) + "; COMMIT")
        hb.psql(db, "VACUUM ANALYZE")
        samples = hb.psql(db, f"SELECT string_agg(id::text, ',') FROM (SELECT id FROM listings WHERE {VISIBLE} "
                              "ORDER BY random() LIMIT 1000) s").split(",")
    else:
        con = sqlite3.connect(db.removeprefix("sqlite://"), timeout=60)
        con.execute("PRAGMA synchronous = OFF")
        for sql in photos_sql(False) + FOLD_MARKET:
            con.execute(sql)
        con.commit()
        con.execute("ANALYZE")
        samples = [r[0] for r in con.execute(f"SELECT id FROM listings WHERE {VISIBLE} ORDER BY random() LIMIT 1000")]
        con.close()
    state.update(db=db, data_key=data_key, key=key, listings=listings, big=big, brands=brands,
                 samples=[int(s) for s in samples], seed_seconds=round(time.time() - started, 1))
    print(f"seeded {db}: {listings} listings over {brands} brands (big {big}) in {state['seed_seconds']} s",
          file=sys.stderr)
    return state


def state_path(args):
    return os.path.join(args.dir, f"storefront-{'pg-' + args.name if args.postgres else 'sqlite'}.json")


def seed(args, binary):
    os.makedirs(args.dir, exist_ok=True)
    states = {}
    for label, db, brands, listings, big in scale.databases(args):
        workdir = os.path.join(args.dir, label if not args.postgres else f"pg-{label}")
        if args.postgres:
            name = db.rsplit("/", 1)[1]
            hb.psql(args.postgres, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            hb.psql(args.postgres, f"CREATE DATABASE {name}")
        else:
            workdir = os.path.dirname(db.removeprefix("sqlite://"))
            shutil.rmtree(workdir, ignore_errors=True)
        data_key = __import__("base64").b64encode(os.urandom(32)).decode()
        states[label] = seed_one(binary, workdir, db, data_key, brands, listings, big)
        states[label]["workdir"] = workdir
    with open(state_path(args), "w") as f:
        json.dump(states, f)


class Node(scale.SlowStart):
    def env(self):
        return dict(super().env(), REHOME_MARKETPLACE_RATE_LIMIT=RATE_LIMIT)


def query(db, sql):
    """One value of `sql` on a seeded database."""
    if db.startswith("postgres"):
        return int(hb.psql(db.split("?", 1)[0], sql))
    con = sqlite3.connect(db.removeprefix("sqlite://"), timeout=60)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def check_counts(label, db):
    """The kept facet counts are folded and add up to the catalogue."""
    rows = query(db, "SELECT COUNT(*) FROM market_counts")
    unfolded = query(db, "SELECT COUNT(*) FROM (SELECT 1 FROM market_counts GROUP BY brand_id, category, condition, "
                         "channel HAVING COUNT(*) > 1) u")
    kept = query(db, "SELECT SUM(live) FROM market_counts WHERE brand_id = 0")
    listed = query(db, f"SELECT COUNT(*) FROM listings WHERE {VISIBLE}")
    analyzed = db.startswith("postgres") or query(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
    print(f"  {label}: market_counts {rows} rows, {unfolded} groups left to fold; kept total {kept}, "
          f"listings in the catalogue {listed}; planner statistics {'present' if analyzed else 'absent'}",
          file=sys.stderr)
    if kept != listed:
        raise RuntimeError(f"{label}: the kept counts ({kept}) are not the catalogue ({listed})")
    return {"market_counts_rows": rows, "unfolded": unfolded, "listed": listed, "analyzed": bool(analyzed)}


def get(base, path, headers=None):
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), resp.read()
    finally:
        conn.close()


def warm(node, state):
    """Each sample's page once (its view counted for wrk's visitor: 127.0.0.1, no User-Agent),
    its ETag kept; then each ETag checked to answer 304."""
    etags = []
    for i in state["samples"]:
        status, headers, _ = get(node.base, f"/marketplace/listings/{i}")
        if status != 200:
            raise RuntimeError(f"listing {i}: {status}")
        etags.append(headers["etag"])
    for i, etag in zip(state["samples"][:50], etags):
        status, _, body = get(node.base, f"/marketplace/listings/{i}", {"If-None-Match": etag})
        if status != 304 or body:
            raise RuntimeError(f"listing {i} with its ETag: {status}")
    return etags


def lua_list(values):
    return "{" + ",".join(json.dumps(v) for v in values) + "}"


def scripts(workdir, state, etags):
    ids = "local ids = " + lua_list(state["samples"]) + "\n"
    page = hb.write_script(workdir, "sf_listing.lua", ids +
                           "request = function() return wrk.format('GET', '/marketplace/listings/' .. "
                           "ids[math.random(#ids)]) end\n")
    visitor = hb.write_script(workdir, "sf_visitor.lua", ids +
                              "local threads = 0\n"
                              "function setup(thread) threads = threads + 1; thread:set('tid', threads) end\n"
                              "local prefix = tostring(os.time()) .. '-' .. tostring(math.random(1, 1000000000))\n"
                              "local n = 0\n"
                              "request = function()\n"
                              "  n = n + 1\n"
                              "  return wrk.format('GET', '/marketplace/listings/' .. ids[math.random(#ids)], "
                              "{['User-Agent'] = 'Mozilla/5.0 (visitor ' .. prefix .. '-' .. tostring(tid) .. '-' .. n .. ')'})\n"
                              "end\n")
    revalidate = hb.write_script(workdir, "sf_304.lua", ids + "local etags = " + lua_list(etags) + "\n"
                                 "request = function()\n"
                                 "  local k = math.random(#ids)\n"
                                 "  return wrk.format('GET', '/marketplace/listings/' .. ids[k], "
                                 "{['If-None-Match'] = etags[k]})\n"
                                 "end\n")
    return page, visitor, revalidate


def scenarios():
    """(name, path, script kind or None, aim p99 ms)."""
    return [
        ("listing page (view counted already)", "/marketplace/listings/1", "page", 20),
        ("listing page, a new visitor each request (view counted)", "/marketplace/listings/1", "visitor", 20),
        ("listing page, 304 (If-None-Match)", "/marketplace/listings/1", "304", 20),
        ("catalogue, first page with facets", "/marketplace", None, 50),
        ("catalogue, q=heirloom (rare word)", "/marketplace?q=heirloom", None, 50),
        ("catalogue, q=sofa (common word)", "/marketplace?q=sofa", None, 50),
        ("catalogue, category=Armchairs", "/marketplace?category=Armchairs", None, 50),
        ("catalogue, channel=clearance", "/marketplace?channel=clearance", None, 50),
        ("catalogue, price £200–£400", "/marketplace?min_price=200&max_price=400", None, 50),
        ("catalogue, sort=price_asc", "/marketplace?sort=price_asc", None, 50),
        ("catalogue, page 100 (the deepest)", "/marketplace?page=100", None, None),
        ("brand page, the big brand", "/marketplace/brands/big", None, None),
    ]


COUNT = re.compile(rb'<p id="count" class="count" role="status">(.*?)</p>', re.S)


def describe(node, path):
    """A catalogue page's count line and its number of cards and covers (the warm-up's check)."""
    status, _, body = get(node.base, path)
    if status != 200:
        raise RuntimeError(f"{path}: {status} {body[:300]!r}")
    count = COUNT.search(body)
    cards = body.count(b'href="/marketplace/listings/')
    covers = body.count(b'src="/media/')
    return f"{count.group(1).decode().strip() if count else '?'}; {cards} card links, {covers} covers"


def machine():
    """The 1-minute load average, and whether another build (rustc) is running."""
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    rustc = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    rustc += f.read().strip() == "rustc"
            except OSError:
                pass
    return load, rustc


def wrk(url, connections, duration, script=None):
    """hb.wrk's figures, and the requests wrk gave up on after its 2 s (`timeouts`): a
    scenario slower than that shows few req/s and the latencies of the few that finished."""
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency"] + (["-s", script] if script else []) + [url]
    out = hb.subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    timeouts = re.search(r"Socket errors:.*timeout (\d+)", out)
    done = re.search(r"(\d+) requests in", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": hb.parse_latency(out, 50), "p99": hb.parse_latency(out, 99),
            "errors": int(non2xx.group(1)) if non2xx else 0, "timeouts": int(timeouts.group(1)) if timeouts else 0,
            "requests": int(done.group(1)) if done else 0}


def one_at_a_time(node, path, n, headers=None):
    """Median and worst ms of `n` requests in a row on one connection; `headers` a dict or a
    callable giving each request's."""
    url = urllib.parse.urlsplit(node.base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        conn.request("GET", path, headers=(headers() if callable(headers) else headers) or {})
        resp = conn.getresponse()
        resp.read()
        times.append((time.perf_counter() - started) * 1000)
        if resp.status not in (200, 304):
            raise RuntimeError(f"{path}: {resp.status}")
    conn.close()
    return statistics.median(times), max(times)


def run(args, binary):
    with open(state_path(args)) as f:
        states = json.load(f)
    labels = [label for label in states if not args.db or label in args.db.split(",")]
    chosen = [i for i in (args.only.split(",") if args.only else [])]
    all_scenarios = [s for i, s in enumerate(scenarios()) if not chosen or str(i) in chosen]
    nodes, scripts_of, checks = {}, {}, {}
    try:
        for label in labels:
            state = states[label]
            checks[label] = check_counts(label, state["db"])
            node = Node(binary, state["workdir"], state["db"], state["data_key"])
            started = time.time()
            node.start()
            print(f"== {label}: {state['db']} (ready in {time.time() - started:.1f} s)", file=sys.stderr)
            nodes[label] = node
            etags = warm(node, state)
            page, visitor, revalidate = scripts(state["workdir"], state, etags)
            scripts_of[label] = {"page": page, "visitor": visitor, "304": revalidate}
            for name, path, kind, _ in all_scenarios:
                if kind is None:
                    print(f"  {label} {name}: {describe(node, path)}", file=sys.stderr)
        settle = {label: scale.settled(states[label]["db"]) for label in labels}
        results = {(label, s[0]): [] for label in labels for s in all_scenarios}
        loads = []
        for i in range(args.runs):
            for name, path, kind, _ in all_scenarios:
                for label in labels:
                    load, rustc = machine()
                    loads.append((load, rustc))
                    script = scripts_of[label][kind] if kind else None
                    r = wrk(nodes[label].base + path, args.connections, args.duration, script)
                    r["load"], r["rustc"] = load, rustc
                    results[(label, name)].append(r)
                    if settle[label]:
                        settle[label]()
                    print(f"  run {i + 1} {label:>5} {name:<58} {r['rps']:>8.0f} req/s  p50 {r['p50']:6.2f} ms  "
                          f"p99 {r['p99']:7.2f} ms  non-2xx/3xx {r['errors']}  timeouts {r['timeouts']}  (load {load:.1f}, rustc {rustc})",
                          file=sys.stderr)
        single = {}
        if args.single:
            for name, path, kind, _ in all_scenarios:
                for label in labels:
                    state = states[label]
                    headers = None
                    if kind:
                        path = f"/marketplace/listings/{state['samples'][0]}"
                        if kind == "304":
                            headers = {"If-None-Match": get(nodes[label].base, path)[1]["etag"]}
                        elif kind == "visitor":
                            headers = lambda: {"User-Agent": f"Mozilla/5.0 (single {time.time_ns()})"}  # noqa: E731
                    single[(label, name)] = one_at_a_time(nodes[label], path, args.single, headers)
            for label in labels:
                for name, path in [("sitemap.xml", "/marketplace/sitemap.xml"),
                                   ("sitemap file 1 (ids 1–50,000)", "/marketplace/sitemaps/1.xml")]:
                    try:
                        single[(label, name)] = one_at_a_time(nodes[label], path, max(3, args.single // 4))
                    except RuntimeError as e:
                        print(f"  {label} {name}: {e}", file=sys.stderr)
        rss = {label: nodes[label].status_kib("VmRSS", "VmHWM") for label in labels}
    finally:
        for node in nodes.values():
            node.stop()
    summary = {}
    for label in labels:
        for s in all_scenarios:
            runs = results[(label, s[0])]
            summary[(label, s[0])] = dict(hb.summarise(s[0], runs), timeouts=sum(r["timeouts"] for r in runs),
                                          requests=sum(r["requests"] for r in runs))
    load_values = [l for l, _ in loads]
    print(f"\n{args.runs} runs × {args.duration} s, {args.connections} connections, wrk -t2 on the same 2 cores; "
          f"load average (1 min) at the runs' starts {min(load_values):.1f}–{max(load_values):.1f} "
          f"(median {statistics.median(load_values):.1f}); another build (rustc) running at the start of "
          f"{sum(1 for _, r in loads if r)} of {len(loads)} runs")
    head = " | ".join(f"{label} req/s; p50 / p99 ms" for label in labels)
    print(f"| scenario | {head} | aim (p99 at size) |")
    print("|---|" + "---:|" * len(labels) + "---|")
    for name, _, _, aim in all_scenarios:
        cells = []
        for label in labels:
            r = summary[(label, name)]
            cell = f"{r['rps']:,.0f}; {r['p50']:.2f} / {r['p99']:.2f}" if r["rps"] >= 1 else "0 (all over 2 s)"
            if r["errors"]:
                cell += f" ({r['errors']} errors)"
            if r["timeouts"] and r["rps"] >= 1:
                cell += f" ({r['timeouts']:,} of {r['requests'] + r['timeouts']:,} over 2 s)"
            cells.append(cell)
        big = summary[(labels[-1], name)]
        met = big["rps"] >= 1 and not big["timeouts"] and big["p99"] < (aim or 0)
        verdict = "" if aim is None else f"< {aim} ms: {'met' if met else 'missed'}"
        print(f"| {name} | {' | '.join(cells)} | {verdict} |")
    print("\nEach run's p99 (ms):")
    for name, *_ in all_scenarios:
        print(f"  {name}: " + "; ".join(f"{label} " + ", ".join(f"{r['p99']:.1f}" for r in results[(label, name)])
                                        for label in labels))
    if single:
        print(f"\nOne request at a time ({args.single} each; median / worst ms):")
        print("| scenario | " + " | ".join(labels) + " |")
        print("|---|" + "---:|" * len(labels))
        names = [s[0] for s in all_scenarios] + ["sitemap.xml", "sitemap file 1 (ids 1–50,000)"]
        for name in names:
            cells = [f"{single[(label, name)][0]:.1f} / {single[(label, name)][1]:.1f}" if (label, name) in single
                     else "" for label in labels]
            print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for label in labels:
        print(f"{label}: RSS at the end {rss[label]['VmRSS'] / 1024:.1f} MiB, peak {rss[label]['VmHWM'] / 1024:.1f} "
              f"MiB; market_counts {checks[label]['market_counts_rows']} rows ({checks[label]['unfolded']} groups "
              f"unfolded), {checks[label]['listed']} listings in the catalogue; planner statistics "
              f"{'present' if checks[label]['analyzed'] else 'absent'}")
    with open(os.path.join(args.dir, f"storefront-results-{int(time.time())}.json"), "w") as f:
        json.dump({"labels": labels, "rows": {f"{k[0]}|{k[1]}": v for k, v in results.items()},
                   "single": {f"{k[0]}|{k[1]}": v for k, v in single.items()}}, f)


class LoggingNode(Node):
    """A node that logs every statement with its time (`sqlx::query` at debug) to `log`."""

    def start(self):
        env = dict(self.env(), RUST_LOG="warn,sqlx::query=debug", REHOME_MEDIA_DIR=os.path.join(self.workdir, "media"))
        self.log = os.path.join(self.workdir, "statements.log")
        with open(self.log, "w") as out:
            self.proc = hb.subprocess.Popen([self.binary, "serve", "--addr", f"127.0.0.1:{self.port}"], env=env,
                                            stdout=out, stderr=hb.subprocess.STDOUT)
        self.wait_ready()


STATEMENT = re.compile(r'db\.statement="(.*?)" rows_affected=\d+ rows_returned=(\d+) elapsed=\S+ '
                       r'elapsed_secs=([\d.e-]+)')
# What the node's own tasks run meanwhile (the queues, the folders, retention): left out.
BACKGROUND = ("webhook", "lease_", "thumb_status", "HAVING COUNT(*) > 1", "listing_counts", "retention", "outbox",
              "sign_in", "idempotency", "BEGIN", "COMMIT", "sessions", "payouts", "invitations")


def sqlite_plan_tool(args):
    """bench/sqlite_plan.c built against the SQLite that libsqlite3-sys bundles (the Cargo.lock's version)."""
    tool = os.path.join(args.dir, "sqlite_plan")
    if os.path.exists(tool):
        return tool
    with open(os.path.join(hb.ROOT, "Cargo.lock")) as f:
        version = re.search(r'name = "libsqlite3-sys"\nversion = "([^"]+)"', f.read()).group(1)
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    registry = os.path.join(home, "registry", "src")
    source = next(os.path.join(registry, d, f"libsqlite3-sys-{version}", "sqlite3")
                  for d in os.listdir(registry) if os.path.isdir(os.path.join(registry, d, f"libsqlite3-sys-{version}")))
    flags = ["-DSQLITE_CORE", "-DSQLITE_DEFAULT_FOREIGN_KEYS=1", "-DSQLITE_ENABLE_API_ARMOR",
             "-DSQLITE_ENABLE_COLUMN_METADATA", "-DSQLITE_ENABLE_DBSTAT_VTAB", "-DSQLITE_ENABLE_FTS3",
             "-DSQLITE_ENABLE_FTS3_PARENTHESIS", "-DSQLITE_ENABLE_FTS5", "-DSQLITE_ENABLE_JSON1",
             "-DSQLITE_ENABLE_MEMORY_MANAGEMENT", "-DSQLITE_ENABLE_RTREE", "-DSQLITE_ENABLE_STAT4", "-DSQLITE_SOUNDEX",
             "-DSQLITE_THREADSAFE=1", "-DSQLITE_USE_URI"]
    hb.subprocess.run(["cc", "-O2", "-I", source, "-o", tool, os.path.join(hb.ROOT, "bench", "sqlite_plan.c"),
                       os.path.join(source, "sqlite3.c"), *flags, "-lpthread", "-lm", "-ldl"], check=True)
    return tool


def plans(args, binary):
    """Each scenario's statements as the node runs them: their median time over `--loads`
    requests one at a time (from the node's own log), and on SQLite their plans as the
    server's SQLite makes them (the statements as prepared, with their placeholders)."""
    with open(state_path(args)) as f:
        states = json.load(f)
    tool = None if args.postgres else sqlite_plan_tool(args)
    for label, state in states.items():
        if args.db and label not in args.db.split(","):
            continue
        node = LoggingNode(binary, state["workdir"], state["db"], state["data_key"])
        node.start()
        try:
            print(f"\n## {label}: {state['db']}")
            for i, (name, path, kind, _) in enumerate(scenarios()):
                if args.only and str(i) not in args.only.split(","):
                    continue
                if kind:
                    path = f"/marketplace/listings/{state['samples'][0]}"
                headers = {"User-Agent": "Mozilla/5.0 (plans)"} if kind != "visitor" else None
                with open(node.log) as f:
                    f.seek(0, 2)
                    start = f.tell()
                one_at_a_time(node, path, args.loads,
                              headers if kind != "visitor" else
                              (lambda: {"User-Agent": f"Mozilla/5.0 (plans {time.time_ns()})"}))
                time.sleep(0.3)
                with open(node.log, errors="replace") as f:
                    f.seek(start)
                    logged = f.read()
                seen = {}
                for text, rows, secs in STATEMENT.findall(logged):
                    sql = json.loads('"' + text + '"').strip()
                    if not sql or any(mark in sql for mark in BACKGROUND):
                        continue
                    seen.setdefault(sql, []).append((float(secs) * 1000, int(rows)))
                print(f"\n### {name}: {path}")
                for sql, runs in seen.items():
                    times = [t for t, _ in runs]
                    print(f"- {len(runs)}×, median {statistics.median(times):.2f} ms, worst {max(times):.2f} ms, "
                          f"{runs[-1][1]} rows: {' '.join(sql.split())[:300]}")
                    if tool and sql.lstrip().upper().startswith("SELECT") and ("listings" in sql or "market" in sql):
                        out = hb.subprocess.run([tool, state["db"].removeprefix("sqlite://")],
                                                input=f"EXPLAIN QUERY PLAN {sql}\n;;\n", capture_output=True,
                                                text=True).stdout
                        for line in out.splitlines():
                            if line.startswith("  "):
                                print(f"      {line.strip()}")
        finally:
            node.stop()


def stats(args):
    """SQLite only: drop the planner's statistics (sqlite_stat1: the state of a database the
    server created, as it never runs ANALYZE) or write them again (ANALYZE: as seeded)."""
    with open(state_path(args)) as f:
        states = json.load(f)
    for label, state in states.items():
        con = sqlite3.connect(state["db"].removeprefix("sqlite://"), timeout=60)
        if args.analyze:
            con.execute("ANALYZE")
        else:
            con.execute("DROP TABLE IF EXISTS sqlite_stat1")
        con.commit()
        n = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()[0]
        print(f"{label}: sqlite_stat1 {'present' if n else 'absent'}", file=sys.stderr)
        con.close()


def execute(db, sql):
    """Runs `sql` (a write) on a seeded database, beside a running node."""
    if db.startswith("postgres"):
        hb.psql(db.split("?", 1)[0], sql)
        return
    con = sqlite3.connect(db.removeprefix("sqlite://"), timeout=60)
    try:
        con.execute(sql)
        con.commit()
    finally:
        con.close()


CSRF_FIELD = re.compile(rb'name="csrf" value="([^"]*)"')
CSRF_COOKIE = re.compile(r"rehome_checkout=([^;]*)")
REFUSAL = re.compile(rb'<p class="alert" role="alert">(.*?)</p>', re.S)


def clearance_listing(node, key, title, quantity):
    """A clearance listing of `quantity` units of the big brand, made through the API."""
    return hb.post_json(node.base + "/v1/listings", key, dict(hb.LISTING, title=title, channel="clearance",
                                                                quantity=quantity))["id"]


def anti_forgery(node, listing_id):
    """The checkout form's token from one GET of a listing's page: its hidden field and its
    cookie, which must agree."""
    status, headers, body = get(node.base, f"/marketplace/listings/{listing_id}")
    field = CSRF_FIELD.search(body)
    cookie = CSRF_COOKIE.search(headers.get("set-cookie", ""))
    if status != 200 or not field or not cookie or field.group(1).decode() != cookie.group(1):
        raise RuntimeError(f"listing {listing_id}: {status}, no anti-forgery token in its form and cookie")
    return cookie.group(1)


def checkout_form(token, buyer="Bench Buyer"):
    return urllib.parse.urlencode({"name": buyer, "email": "buyer@example.com", "postcode": "SW1A 1AA",
                                   "quantity": "1", "csrf": token})


def checkout_headers(token):
    return {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"rehome_checkout={token}"}


def refusal_of(body):
    """The sentence of a refused checkout's page (the form's refusal), else its title."""
    found = REFUSAL.search(body) or re.search(rb"<title>(.*?)</title>", body, re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1).decode())).strip() if found else "?"


def burst(node, listing_id, token, buyers):
    """`buyers` checkouts of one unit at once, each on its own connection (all connected
    first, then released together): [(status, ms, sentence)]."""
    url = urllib.parse.urlsplit(node.base)
    path = f"/marketplace/listings/{listing_id}/checkout"
    gate = threading.Barrier(buyers)
    answers = [None] * buyers

    def buyer(i):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        try:
            conn.connect()
            body = checkout_form(token, f"Burst Buyer {i}")
            gate.wait()
            started = time.perf_counter()
            conn.request("POST", path, body=body, headers=checkout_headers(token))
            resp = conn.getresponse()
            page = resp.read()
            answers[i] = (resp.status, (time.perf_counter() - started) * 1000,
                          "" if resp.status == 303 else refusal_of(page))
        except Exception as e:  # noqa: BLE001 (reported as an answer)
            answers[i] = (0, 0.0, f"{type(e).__name__}: {e}")
        finally:
            conn.close()

    threads = [threading.Thread(target=buyer, args=(i,)) for i in range(buyers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def sold(db, listing_id):
    """(orders, units ordered, stock left, status, buyers recorded) of a listing."""
    orders = query(db, f"SELECT COUNT(*) FROM orders WHERE listing_id = {listing_id}")
    units = query(db, f"SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE listing_id = {listing_id}")
    left = query(db, f"SELECT quantity FROM listings WHERE id = {listing_id}")
    closed = query(db, f"SELECT COUNT(*) FROM listings WHERE id = {listing_id} AND status = 'closed'")
    buyers = query(db, "SELECT COUNT(*) FROM order_buyers b JOIN orders o ON o.id = b.order_id "
                       f"WHERE o.listing_id = {listing_id}")
    return {"orders": orders, "units": units, "left": left, "closed": bool(closed), "buyers": buyers}


def burst_report(label, what, answers, units, db, listing_id):
    statuses = {}
    for status, _, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1
    sentences = {}
    for status, _, sentence in answers:
        if status != 303:
            sentences[sentence] = sentences.get(sentence, 0) + 1
    after = sold(db, listing_id)
    times = sorted(ms for _, ms, _ in answers)
    ok = (statuses.get(303, 0) == units and statuses.get(409, 0) == len(answers) - units
          and after["orders"] == units and after["units"] == units and after["left"] == 0 and after["closed"]
          and after["buyers"] == units)
    line = (f"  {label} {what}: {len(answers)} buyers on {units} unit{'s' if units > 1 else ''}: "
            + ", ".join(f"{n} × {s}" for s, n in sorted(statuses.items())) +
            f"; orders {after['orders']} ({after['units']} units, {after['buyers']} buyers recorded), stock left "
            f"{after['left']}, {'closed' if after['closed'] else 'NOT closed'}; answers in "
            f"{times[0]:.0f}–{times[-1]:.0f} ms (median {statistics.median(times):.0f}) — "
            + ("as it should" if ok else "WRONG"))
    print(line, file=sys.stderr)
    for sentence, n in sentences.items():
        print(f"      {n} × {sentence}", file=sys.stderr)
    return {"statuses": statuses, "sentences": sentences, "after": after, "ok": ok,
            "ms": [times[0], statistics.median(times), times[-1]]}


def checkout_script(workdir, listing_id, token):
    """wrk's buyers: the form POSTed, and each answer's status counted (303 an order)."""
    body = checkout_form(token)
    return hb.write_script(workdir, "sf_checkout.lua", f"""
local threads = {{}}
function setup(thread) table.insert(threads, thread) end
function init(args)
  placed, refused, other = 0, 0, 0
  req = wrk.format("POST", "/marketplace/listings/{listing_id}/checkout",
                   {{["Content-Type"] = "application/x-www-form-urlencoded", ["Cookie"] = "rehome_checkout={token}"}},
                   "{body}")
end
request = function() return req end
response = function(status, headers, body)
  if status == 303 then placed = placed + 1 elseif status == 409 then refused = refused + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  local p, r, o = 0, 0, 0
  for _, t in ipairs(threads) do p = p + t:get("placed"); r = r + t:get("refused"); o = o + t:get("other") end
  io.write(string.format("answers: 303 %d 409 %d other %d\\n", p, r, o))
end
""")


def checkout_wrk(url, connections, duration, script):
    """wrk's figures with the script's count of answers."""
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script, url]
    out = hb.subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    answers = re.search(r"answers: 303 (\d+) 409 (\d+) other (\d+)", out)
    timeouts = re.search(r"Socket errors:.*timeout (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": hb.parse_latency(out, 50), "p90": hb.parse_latency(out, 90), "p99": hb.parse_latency(out, 99),
            "placed": int(answers.group(1)), "refused": int(answers.group(2)), "other": int(answers.group(3)),
            "timeouts": int(timeouts.group(1)) if timeouts else 0}


def checkout_one_at_a_time(node, listing_id, token, n):
    url = urllib.parse.urlsplit(node.base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    times = []
    for i in range(n):
        started = time.perf_counter()
        conn.request("POST", f"/marketplace/listings/{listing_id}/checkout", body=checkout_form(token, f"Single {i}"),
                     headers=checkout_headers(token))
        resp = conn.getresponse()
        resp.read()
        times.append((time.perf_counter() - started) * 1000)
        if resp.status != 303:
            raise RuntimeError(f"checkout one at a time: {resp.status}")
    conn.close()
    return statistics.median(times), max(times)


def checkout(args, binary):
    """Issue 47's figures: bursts of buyers on few units, and checkout under 64 connections."""
    with open(state_path(args)) as f:
        states = json.load(f)
    labels = [label for label in states if not args.db or label in args.db.split(",")]
    nodes, bursts, loaded, listing_of, token_of, single, mails = {}, {}, {}, {}, {}, {}, {}
    stamp = int(time.time())
    try:
        for label in labels:
            state = states[label]
            node = Node(binary, state["workdir"], state["db"], state["data_key"])
            started = time.time()
            node.start()
            nodes[label] = node
            print(f"== {label}: {state['db']} (ready in {time.time() - started:.1f} s)", file=sys.stderr)
            mails[label] = query(state["db"], "SELECT COUNT(*) FROM mail_outbox")
            bursts[label] = []
            for b in range(args.bursts):
                for what, units, buyers in [("burst", args.units, args.buyers), ("last unit", 1, args.last)]:
                    listing_id = clearance_listing(node, state["key"], f"Bench {what} {stamp}-{b}", units)
                    token = anti_forgery(node, listing_id)
                    answers = burst(node, listing_id, token, buyers)
                    bursts[label].append(dict(burst_report(label, f"{what} {b + 1}", answers, units, state["db"],
                                                           listing_id), what=what, units=units, buyers=buyers))
            listing_of[label] = clearance_listing(node, state["key"], f"Bench checkout {stamp}", 10_000)
            token_of[label] = anti_forgery(node, listing_of[label])
        settle = {label: scale.settled(states[label]["db"]) for label in labels}
        results = {label: [] for label in labels}
        loads = []
        for i in range(args.runs):
            for label in labels:
                db, listing_id = states[label]["db"], listing_of[label]
                execute(db, f"UPDATE listings SET quantity = {args.stock} WHERE id = {listing_id}")
                before = query(db, f"SELECT COUNT(*) FROM orders WHERE listing_id = {listing_id}")
                script = checkout_script(states[label]["workdir"], listing_id, token_of[label])
                load, rustc = machine()
                loads.append((load, rustc))
                r = checkout_wrk(nodes[label].base + f"/marketplace/listings/{listing_id}/checkout",
                                 args.connections, args.duration, script)
                if settle[label]:
                    settle[label]()
                r["orders"] = query(db, f"SELECT COUNT(*) FROM orders WHERE listing_id = {listing_id}") - before
                r["load"], r["rustc"] = load, rustc
                results[label].append(r)
                print(f"  run {i + 1} {label:>5} checkout {r['rps']:>8.0f} req/s  p50 {r['p50']:6.2f} ms  "
                      f"p90 {r['p90']:6.2f} ms  p99 {r['p99']:7.2f} ms  303 {r['placed']}  409 {r['refused']}  "
                      f"other {r['other']}  timeouts {r['timeouts']}  orders written {r['orders']}  "
                      f"(load {load:.1f}, rustc {rustc})", file=sys.stderr)
        if args.single:
            for label in labels:
                single[label] = checkout_one_at_a_time(nodes[label], listing_of[label], token_of[label], args.single)
        rss = {label: nodes[label].status_kib("VmRSS", "VmHWM") for label in labels}
        for label in labels:
            mails[label] = query(states[label]["db"], "SELECT COUNT(*) FROM mail_outbox") - mails[label]
    finally:
        for node in nodes.values():
            node.stop()
        # The loaded listing sold out, so that the catalogue is again the seeded one (the
        # bursts' listings sold out by themselves).
        for label, listing_id in listing_of.items():
            execute(states[label]["db"], f"UPDATE listings SET quantity = 0, status = 'closed' WHERE id = {listing_id}")
    load_values = [l for l, _ in loads]
    print(f"\nBursts (each on a new clearance listing; {args.bursts} of each):")
    for label in labels:
        for b in bursts[label]:
            print(f"  {label} {b['what']}: {b['buyers']} buyers on {b['units']}: "
                  + ", ".join(f"{n} × {s}" for s, n in sorted(b["statuses"].items()))
                  + f"; {b['after']['orders']} orders, stock left {b['after']['left']}"
                  + f"; answers {b['ms'][0]:.0f}–{b['ms'][2]:.0f} ms; {'ok' if b['ok'] else 'WRONG'}")
    print(f"\nCheckout under load: {args.runs} runs × {args.duration} s, {args.connections} connections, wrk -t2 on "
          f"the same 2 cores; load average (1 min) at the runs' starts {min(load_values):.1f}–{max(load_values):.1f} "
          f"(median {statistics.median(load_values):.1f}); another build (rustc) running at the start of "
          f"{sum(1 for _, r in loads if r)} of {len(loads)} runs")
    print("| database | req/s | p50 ms | p90 ms | p99 ms | 303 | other answers | orders written | one at a time ms "
          "(median / worst) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in labels:
        runs = results[label]
        med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
        one = f"{single[label][0]:.1f} / {single[label][1]:.1f}" if label in single else ""
        print(f"| {label} | {med('rps'):,.0f} | {med('p50'):.2f} | {med('p90'):.2f} | {med('p99'):.2f} | "
              f"{sum(r['placed'] for r in runs):,} | {sum(r['refused'] + r['other'] + r['timeouts'] for r in runs)} | "
              f"{sum(r['orders'] for r in runs):,} | {one} |")
    print("\nEach run's p99 (ms): " + "; ".join(f"{label} " + ", ".join(f"{r['p99']:.1f}" for r in results[label])
                                              for label in labels))
    for label in labels:
        print(f"{label}: RSS at the end {rss[label]['VmRSS'] / 1024:.1f} MiB, peak {rss[label]['VmHWM'] / 1024:.1f} "
              f"MiB; mails queued meanwhile: {mails[label]}")
    with open(os.path.join(args.dir, f"checkout-results-{'pg-' if args.postgres else ''}{int(time.time())}.json"),
              "w") as f:
        json.dump({"labels": labels, "bursts": bursts, "runs": results, "single": single, "mails": mails}, f)


def drop(args):
    if args.postgres:
        for _, db, *_ in scale.databases(args):
            hb.psql(args.postgres, f"DROP DATABASE IF EXISTS {db.rsplit('/', 1)[1]} WITH (FORCE)")
    shutil.rmtree(args.dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["seed", "run", "plans", "stats", "checkout", "drop"])
    parser.add_argument("--dir", default="/tmp/rehome-storefront")
    parser.add_argument("--postgres", metavar="ADMIN_URL")
    parser.add_argument("--name", default="rehome_storefront", help="PostgreSQL database name")
    parser.add_argument("--listings", type=int, default=1_000_000)
    parser.add_argument("--brands", type=int, default=1000)
    parser.add_argument("--big", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--single", type=int, default=0, metavar="N",
                        help="also N requests one at a time per scenario (median and worst)")
    parser.add_argument("--db", help="comma-separated labels (100k, 1M…): run on these databases only")
    parser.add_argument("--only", help="comma-separated scenario numbers (0-11)")
    parser.add_argument("--analyze", action="store_true", help="stats: ANALYZE (else: drop the statistics)")
    parser.add_argument("--loads", type=int, default=10, help="plans: requests per scenario")
    parser.add_argument("--buyers", type=int, default=200, help="checkout: buyers at once in a burst")
    parser.add_argument("--units", type=int, default=20, help="checkout: units of the burst's listing")
    parser.add_argument("--last", type=int, default=12, help="checkout: buyers at once on a last unit")
    parser.add_argument("--bursts", type=int, default=3, help="checkout: bursts of each kind")
    parser.add_argument("--stock", type=int, default=100_000,
                        help="checkout: the loaded listing's stock before each run (set by SQL)")
    args = parser.parse_args()
    if args.command != "drop" and args.command != "seed" and not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    binary = os.environ.get("REHOME_BENCH_BINARY") or os.path.join(hb.target_dir(), "release", "rehome")
    {"seed": lambda: seed(args, binary), "run": lambda: run(args, binary), "plans": lambda: plans(args, binary),
     "stats": lambda: stats(args), "checkout": lambda: checkout(args, binary),
     "drop": lambda: drop(args)}[args.command]()


if __name__ == "__main__":
    main()
