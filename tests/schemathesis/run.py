#!/usr/bin/env python3
"""schemathesis against the real server: every check over the OpenAPI document the server
publishes, with the partner key and the operator token, bounded and deterministic; exits
non-zero on any finding.

Starts `rehome serve --demo` from the built binary in a temporary directory (the demo's
sample data gives the stateful phase real listings, orders and codes to work on). Usage:

    python3 tests/schemathesis/run.py [--binary target/debug/rehome] [-- extra st arguments]

Needs `schemathesis` (pip; 4.x).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "browser"))
from harness import free_port, wait_until_up  # noqa: E402


def start(binary: str, workdir: str, ops_token: str):
    port = free_port()
    env = dict(os.environ)
    env.pop("REHOME_DATA_KEY", None)
    # Generated requests come fast and many without a key: the limits would answer 429
    # to most of them and hide what the run is for (429 is documented and expected).
    env["REHOME_RATE_LIMIT"] = "1000000"
    env["REHOME_OPS_TOKEN"] = ops_token
    log = open(os.path.join(workdir, "server.log"), "w")
    server = subprocess.Popen(
        [binary, "serve", "--demo", "--addr", f"127.0.0.1:{port}", "--database-url", "sqlite://rehome.db"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    key = None
    deadline = time.time() + 60
    while key is None:
        line = server.stdout.readline()
        if not line:
            server.kill()
            sys.exit("the server stopped before printing the demo key")
        found = re.search(r"\b(rhk_[A-Za-z0-9]+)", line)
        if found:
            key = found.group(1)
    wait_until_up(server, base, max(1.0, deadline - time.time()))
    return server, base, key


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/debug/rehome")
    parser.add_argument("st_args", nargs="*")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    try:
        import schemathesis  # noqa: F401
    except ImportError:
        sys.exit("schemathesis is not installed (pip install schemathesis)")
    workdir = tempfile.mkdtemp(prefix="rehome-st-")
    ops_token = "st-ops-" + os.urandom(12).hex()
    server, base, key = start(binary, workdir, ops_token)
    try:
        env = dict(os.environ, REHOME_ST_KEY=key, REHOME_ST_OPS_TOKEN=ops_token)
        command = [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            os.path.join(HERE, "schemathesis.toml"),
            "run",
            base + "/v1/openapi.json",
            "--checks",
            "all",
            # One worker: with two, CPython 3.11's `ast.parse` (which Hypothesis calls to
            # describe lambdas) fails now and then across threads ("AST constructor recursion
            # depth mismatch"), a runtime error of the tool rather than a finding.
            "--workers",
            "1",
            "--no-color",
            *args.st_args,
        ]
        code = subprocess.run(command, env=env).returncode
        if server.poll() is not None:
            print("the server died during the run", file=sys.stderr)
            code = code or 1
        return code
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        if os.environ.get("REHOME_ST_KEEP"):
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
