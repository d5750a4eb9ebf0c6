#!/usr/bin/env python3
"""Bodies held open (issue 52 item 1): N connections from one address each announce a
`Content-Length` of SIZE and send the first CHUNK of it, then wait within the grace period;
the server's resident memory is sampled before, at its peak while they wait, and after they
close. Run against a release build, budgets on (the defaults) and off (a baseline in the
same run), several times; prints medians.

    bench/body_memory.py --binary target/release/rehome [--connections 200] [--runs 3]

With `--addresses 8 --connections 2000` (issue 52's burst) the connections come from eight
loopback addresses of eight /24 networks, one API key, and while they are held another
client (a ninth network, another key) lists and creates listings: how many of its requests
were answered 2xx is printed beside the memory.
"""

import argparse
import http.client
import json
import os
import resource
import re
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def probe(port, key, tries=20):
    """Lists and creates listings as another client would: how many answered 2xx."""
    ok = 0
    body = json.dumps({"title": "Probe chair", "price_gbp": 40, "condition": "excellent", "category": "Armchairs",
                       "faults": ["None"]})
    for i in range(tries):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.99.1", 0))
        try:
            if i % 2:
                conn.request("POST", "/v1/listings", body, {"Authorization": f"Bearer {key}",
                                                            "Content-Type": "application/json"})
            else:
                conn.request("GET", "/v1/listings", headers={"Authorization": f"Bearer {key}"})
            ok += conn.getresponse().status // 100 == 2
        except OSError:
            pass
        finally:
            conn.close()
    return ok


def second_key(port, key):
    """A key of its own for the probe (the demo brand's admin mints one over the API)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/partner/settings/integrations/keys", json.dumps({"label": "probe", "scopes": ["read", "write"]}),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    return json.loads(conn.getresponse().read())["secret"]


def demo_server(binary, **settings):
    """`rehome serve --demo` on a fresh SQLite database in a temporary directory, with the
    rate limit lifted and `settings` (environment variables) added, once it answers:
    `(process, port, the demo key, the directory)`. The caller stops the process."""
    work = tempfile.mkdtemp()
    port = free_port()
    env = dict(os.environ, REHOME_DATABASE_URL=f"sqlite://{work}/r.db", REHOME_MEDIA_DIR=f"{work}/m",
               REHOME_ADDR=f"127.0.0.1:{port}", REHOME_RATE_LIMIT="1000000", **settings)
    out = open(f"{work}/out", "w")
    server = subprocess.Popen([binary, "serve", "--demo"], env=env, stdout=out, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    key = re.search(r"rhk_[A-Za-z0-9]+", open(f"{work}/out").read()).group(0)
    return server, port, key, work


def one_run(binary, budgets_on, connections, size, chunk, addresses=1):
    off = {} if budgets_on else dict(REHOME_BODY_MEMORY_MB="1048576", REHOME_BODY_MEMORY_PER_NETWORK_MB="1048576",
                                      REHOME_BODY_MEMORY_PER_KEY_MB="1048576")
    server, port, key, _ = demo_server(binary, **off)
    try:
        probe_key = second_key(port, key)
        time.sleep(1)
        before, _ = rss_kib(server.pid)
        head = (f"POST /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n").encode()
        sockets, refused = [], 0
        for i in range(connections):
            source = ("127.0.0.1", 0) if addresses == 1 else (f"127.0.{i % addresses + 1}.1", 0)
            try:
                s = socket.create_connection(("127.0.0.1", port), source_address=source)
            except OSError:
                refused += 1
                continue
            try:
                s.sendall(head + b" " * chunk)
                sockets.append(s)
            except (BrokenPipeError, ConnectionResetError):
                # Refused before its body was read, and closed: the server says so first.
                refused += 1
                s.close()
        time.sleep(3)
        for s in sockets:
            s.setblocking(False)
            try:
                if s.recv(12)[:12] in (b"HTTP/1.1 429", b"HTTP/1.1 503"):
                    refused += 1
            except BlockingIOError:
                pass
        served = probe(port, probe_key) if addresses > 1 else None
        _, peak = rss_kib(server.pid)
        for s in sockets:
            s.close()
        time.sleep(3)
        after, _ = rss_kib(server.pid)
        return before, peak, after, refused, served
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--size", type=int, default=1024 * 1024)
    parser.add_argument("--chunk", type=int, default=64 * 1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--addresses", type=int, default=1)
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for budgets_on in (False, True):
        runs = [one_run(args.binary, budgets_on, args.connections, args.size, args.chunk, args.addresses)
                for _ in range(args.runs)]
        med = lambda i: statistics.median(r[i] for r in runs)
        label = "budgets on (defaults)" if budgets_on else "budgets off (baseline)"
        print(f"{label}: {args.connections} bodies of {args.size // 1024} KiB held open, {args.chunk // 1024} KiB sent each; "
              f"RSS before {med(0) / 1024:.0f} MiB, peak {med(1) / 1024:.0f} MiB, 3 s after they close "
              f"{med(2) / 1024:.0f} MiB; answered before their bodies came: {med(3):.0f}"
              + (f"; another client's requests answered 2xx: {med(4):.0f} of 20" if args.addresses > 1 else "")
              + f" (medians of {args.runs})")


if __name__ == "__main__":
    main()
