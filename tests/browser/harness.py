"""What the browser checks share: their command line, the people they sign in as, the
binary's CLI to seed them, starting the built binary on a free port with a SQLite database
in a working directory, and waiting until it answers."""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADMIN = "ada@acme.example"
MEMBER = "mo@acme.example"
PASSWORD = "correct horse battery staple"


def browser_args():
    """`--binary` and `--screenshots` (made if given), and the system Chromium: returns the
    parsed arguments, the Chromium path and the binary's absolute path."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    parser.add_argument("--screenshots")
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("no chromium found (apt-get install chromium, or set CHROMIUM)")
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
    return args, chromium, os.path.abspath(args.binary)


def cli(binary, workdir, *args, stdin=""):
    """`rehome ARGS` on the working directory's database; its last line of output."""
    env = dict(os.environ, REHOME_DATABASE_URL="sqlite://rehome.db")
    env.pop("REHOME_DATA_KEY", None)
    done = subprocess.run([binary, *args], cwd=workdir, env=env, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"rehome {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def seed_people(binary, workdir):
    """The brand `acme` with an admin (ADMIN) and a member (MEMBER), both with PASSWORD;
    returns an API key of the admin's."""
    cli(binary, workdir, "brands", "create", "acme", "--name", "Acme Sofas")
    admin = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Ada Admin", "--email", ADMIN)
    cli(binary, workdir, "users", "set-password", admin, stdin=PASSWORD + "\n")
    member = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Mo Member", "--email", MEMBER,
                 "--role", "member")
    cli(binary, workdir, "users", "set-password", member, stdin=PASSWORD + "\n")
    return cli(binary, workdir, "keys", "create", "--user", admin, "--rate-limit", "10000")


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
