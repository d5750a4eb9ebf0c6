"""What the browser checks share: starting the built binary on a free port with a SQLite
database in a working directory, and waiting until it answers."""

import os
import socket
import subprocess
import sys
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary: str, workdir: str, *extra: str):
    """`rehome serve` (plus `extra` arguments) on `sqlite://rehome.db` in `workdir`, with
    the data key file beside it; returns the process and its base URL once /healthz answers."""
    port = free_port()
    env = dict(os.environ)
    env.pop("REHOME_DATA_KEY", None)
    server = subprocess.Popen(
        [binary, "serve", *extra, "--addr", f"127.0.0.1:{port}", "--database-url", "sqlite://rehome.db"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(server, base)
    return server, base


def wait_until_up(server, base: str, seconds: float = 30):
    """Returns once `base`/healthz answers 200; exits if the process ends or time runs out."""
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            server.kill()
            sys.exit(f"the server at {base} did not start")
        time.sleep(0.1)
