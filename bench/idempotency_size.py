#!/usr/bin/env python3
"""What an `Idempotency-Key` costs the database (issue 52 item 5): N keyed listing creates
against a release build on SQLite, then the bytes the idempotency table and its indexes hold
(SQLite's `dbstat`), per key. The baseline is measured on the same rows in the same run:
every kept body is inflated back to the answer's bytes (as stored before the packing),
the file vacuumed and measured again.

    bench/idempotency_size.py --binary target/release/rehome [--keys 3000] [--runs 3]
"""

import argparse
import http.client
import json
import os
import re
import sqlite3
import statistics
import zlib

from body_memory import demo_server

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = open(os.path.join(HERE, "..", "src", "domain", "idempotency.rs")).read()
DICTIONARY = re.search(r'pub const DICTIONARY_V1: &\[u8\] = br#"(.*?)"#;', SOURCE, re.S).group(1).encode()
TABLES = ("idempotency_keys", "idempotency_keys_expiry", "sqlite_autoindex_idempotency_keys_1")



def table_bytes(db):
    with sqlite3.connect(db) as c:
        marks = ",".join("?" * len(TABLES))
        return c.execute(f"SELECT SUM(pgsize) FROM dbstat WHERE name IN ({marks})", TABLES).fetchone()[0]


def one_run(binary, keys):
    server, port, key, work = demo_server(binary)
    db = f"{work}/r.db"
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for i in range(keys):
            body = json.dumps({"title": f"Three-seat sofa in oak and linen no. {i}", "price_gbp": 1200,
                               "condition": "excellent", "category": "3-Seater Sofas", "faults": ["None"],
                               "description": "A well kept three-seat sofa from a smoke-free home.",
                               "sku": f"SOFA-2026-{i:05}", "colour": "Natural", "fabric": "Linen"})
            conn.request("POST", "/v1/listings", body, {"Authorization": f"Bearer {key}",
                                                        "Content-Type": "application/json",
                                                        "Idempotency-Key": f"{i:08x}-7f3a-4c1e-9b2d-0c8e5a6f1d2b"})
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 201, answer.status
    finally:
        server.terminate()
        server.wait()
    with sqlite3.connect(db) as c:
        c.execute("VACUUM")
        answered = c.execute("SELECT SUM(LENGTH(body)) FROM idempotency_keys").fetchone()[0]
    packed = table_bytes(db)
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT rowid, body, body_deflated FROM idempotency_keys").fetchall()
        plain = 0
        for rowid, body, deflated in rows:
            if deflated:
                inflate = zlib.decompressobj(wbits=-15, zdict=DICTIONARY)
                body = inflate.decompress(body) + inflate.flush()
            plain += len(body)
            c.execute("UPDATE idempotency_keys SET body = ?, body_deflated = 0 WHERE rowid = ?", (body, rowid))
        c.commit()
        c.execute("VACUUM")
    return packed / keys, table_bytes(db) / keys, answered / keys, plain / keys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--keys", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.binary, args.keys) for _ in range(args.runs)]
    med = lambda i: statistics.median(r[i] for r in runs)
    print(f"{args.keys} keyed listing creates: the idempotency table and its indexes hold {med(0):.0f} bytes a key "
          f"(body {med(2):.0f}); the same rows with the answers as they were: {med(1):.0f} bytes a key "
          f"(body {med(3):.0f}) (medians of {args.runs})")


if __name__ == "__main__":
    main()
