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


class Watch:
    """Collects a page's console errors and its requests to other origins. A refused form
    answers 4xx, which Chromium logs as a failed load: add the status to `allowed` while a
    refusal is expected."""

    def __init__(self, page, origin):
        self.problems = []
        self.allowed = set()
        page.on("console", self.on_console)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("request", lambda r: None if r.url.startswith(origin + "/") or r.url.startswith("data:")
                else self.problems.append(f"request to another origin: {r.url}"))

    @property
    def allowed_status(self):
        return self.allowed

    def on_console(self, message):
        if message.type != "error":
            return
        if any(f"status of {s}" in message.text for s in self.allowed):
            return
        self.problems.append(f"console error: {message.text}")


def sign_in(page, base, email):
    """Signs `email` in with PASSWORD on the sign-in page."""
    page.goto(base + "/dashboard/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


AXE_JS = os.path.join(ROOT, "tests", "browser", "node_modules", "axe-core", "axe.min.js")


def axe_source():
    """axe-core's script (tests/browser/package.json, installed with `npm ci` there)."""
    if not os.path.exists(AXE_JS):
        sys.exit(f"{AXE_JS} is missing: run `npm ci` in tests/browser")
    with open(AXE_JS, encoding="utf-8") as f:
        return f.read()


def axe_violations(page, source):
    """Runs axe-core on the page (its context must bypass the CSP to inject the script; the
    test's context only) and returns each violation as "rule (impact) at target: help"."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(content=source)
    found = page.evaluate("""async () => {
        const result = await window.axe.run(document, {resultTypes: ['violations']});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            targets: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
    }""")
    return [f"{v['id']} ({v['impact']}) at {', '.join(v['targets'])}: {v['help']}" for v in found]


# A visible text that is only a snake_case code (`price_gbp_invalid`), not a sentence.
ONLY_CODE = r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$"


def codes_on_page(page):
    """Visible error texts (alerts, field errors, error paragraphs) that are only a snake_case code."""
    return page.evaluate("""(pattern) => {
        const code = new RegExp(pattern);
        const shown = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
        return [...document.querySelectorAll('[role=alert], .field-error, .error, .row-errors li, td.problems li')]
            .filter(shown).map(el => el.innerText.trim().replace(/[.:]$/, ''))
            .filter(t => code.test(t));
    }""", ONLY_CODE)


def sideways(page):
    """How far the page scrolls sideways (0 when it fits)."""
    return page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")


def ask(page, button):
    """Clicks a button that asks for a confirmation step (web::confirm) and waits for the
    step: shown in place by htmx, or as its own page without JavaScript."""
    button.click()
    page.wait_for_load_state()
    page.locator(".confirm-inline, section.confirm").first.wait_for(state="visible", timeout=5000)


def shoot_pages(page, base, pages, shots, need):
    """Each `(name, path)` of `pages` at 1280 and at 390 px: no sideways scroll (`need` records a
    problem otherwise), and a full-page screenshot `<name>-<width>.png` in `shots` if given."""
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in pages:
            page.goto(base + path)
            page.wait_for_load_state()
            wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
            need(wide <= inner, f"{path} scrolls sideways at {width} px ({wide} > {inner})")
            if shots:
                page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"), full_page=True)
