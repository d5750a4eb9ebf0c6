#!/usr/bin/env python3
"""A local SMTP server for the mail tests (aiosmtpd).

Listens on 127.0.0.1:PORT and writes each message it accepts, exactly as received (the DATA
bytes), to DIR as `<n>.eml`, and beside it `<n>.json`: the envelope and the message as
Python's `email` package reads it (decoded From, To and Subject, the text/plain body and the text/html one, each
attachment's file name, media type and bytes in base64), so tests need no MIME parser.
Each file is written to a temporary name, then renamed, so a reader never sees half of one;
the `.json` comes last. A recipient named with --reject is refused at RCPT with
`550 5.1.1 mailbox unavailable`, as a real server refuses an unknown address.

Prints `ready` on stdout once it accepts connections; runs until SIGTERM, SIGINT or the end
of its standard input (so it dies with the test that started it).

    python3 tests/smtp/server.py --port 2525 --dir /tmp/mail [--reject nobody@x.example]
"""

import argparse
import base64
import email
import email.policy
import json
import itertools
import os
import signal
import sys
import threading

from aiosmtpd.controller import Controller


class Saver:
    def __init__(self, directory, rejected):
        self.directory = directory
        self.rejected = {address.lower() for address in rejected}
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.rejected:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            number = next(self.numbers)
        raw = envelope.original_content
        write(os.path.join(self.directory, f"{number:06}.eml"), raw)
        summary = describe(raw)
        summary["envelope"] = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos}
        write(os.path.join(self.directory, f"{number:06}.json"), json.dumps(summary).encode())
        return "250 Message accepted for delivery"


def write(path, data):
    temporary = path + ".part"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, path)


def describe(raw):
    message = email.message_from_bytes(raw, policy=email.policy.default)
    body = message.get_body(("plain",))
    html = message.get_body(("html",))
    return {
        "from": str(message["From"]),
        "to": str(message["To"]),
        "subject": str(message["Subject"]),
        "headers": [[name, str(value)] for name, value in message.items()],
        "content_type": message.get_content_type(),
        "text": body.get_content() if body is not None else None,
        "html": html.get_content() if html is not None else None,
        "attachments": [
            {
                "name": part.get_filename(),
                "content_type": part.get_content_type(),
                "base64": base64.b64encode(part.get_payload(decode=True) or b"").decode(),
            }
            for part in message.iter_attachments()
        ],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--reject", action="append", default=[], help="a recipient refused with 550")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    # Files already in the directory (a server restarted on it) keep their numbers.
    existing = [name for name in os.listdir(args.dir) if name.endswith(".json")]
    handler = Saver(args.dir, args.reject)
    handler.numbers = itertools.count(len(existing) + 1)
    controller = Controller(handler, hostname="127.0.0.1", port=args.port, decode_data=False)
    controller.start()
    print("ready", flush=True)

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    watcher = threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True)
    watcher.start()
    while not done.wait(0.2):
        pass
    controller.stop()


if __name__ == "__main__":
    main()
