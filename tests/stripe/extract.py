#!/usr/bin/env python3
"""Cuts the test data of the Stripe checks (tests/stripe/) out of what Stripe publishes, so the
checks hold the payments adapter to Stripe's own description of its API rather than to ours:

- `openapi-subset.json`: from Stripe's OpenAPI document (github.com/stripe/openapi,
  `openapi/spec3.json`, or `openapi/spec3.yaml`, the same document in YAML) its `openapi` and
  `info` (`info.version` is the Stripe API version it describes), the three operations the
  adapter uses (`POST /v1/checkout/sessions`, `GET /v1/checkout/sessions/{session}`,
  `POST /v1/checkout/sessions/{session}/expire`), verbatim, and every `components.schemas`
  entry they reference, transitively (the closure of their `$ref`s), verbatim, plus the
  closure of `event`, the envelope of a webhook (no operation references it). Nothing is
  pruned: the closure is about 600 schemas, 1.1 MB written with one space of indent.
- `fixtures-subset.json`: the `checkout.session` and `event` examples of the same commit's
  `openapi/fixtures3.json`, from which the mock builds its answers and events.
- `library-params.json`: the parameters of creating a Checkout Session as Stripe's official
  Python library declares them (`stripe.params.checkout.SessionCreateParams`, TypedDicts
  generated from Stripe's current OpenAPI document), as a JSON Schema: every name, which are
  required, the type of each, the closed enums. The library is the one pinned in
  tests/requirements.txt; the file records its version and its API version. The mock checks
  each request against it too, so a parameter Stripe has since dropped or renamed is caught
  even though the OpenAPI document above is older (see below).

Each file records where it came from (`x-source`). Usage, with a snapshot of stripe/openapi as
a bare git directory (the commit defaults to the newest whose spec3.json or spec3.yaml is in
the snapshot):

    python3 tests/stripe/extract.py --git-dir DIR [--commit SHA]

or from files at hand (say which commit they are):

    python3 tests/stripe/extract.py --spec spec3.json --fixtures fixtures3.json \\
        --source "stripe/openapi@SHA openapi/spec3.json"

Why the OpenAPI document may be older than the library: the snapshot store this project reads
public repositories from keeps no file of 4 MiB or more, and spec3.json has been larger than
that since April 2022 (spec3.yaml since September 2023). The newest complete document it holds
is spec3.yaml at v524 (63a6746, API version 2023-08-16); a newer one, from any source, is used
the same way. Reading YAML needs PyYAML (`pip install pyyaml`); nothing else here does, and no
test runs this script.
"""

import argparse
import json
import os
import subprocess
import sys
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
OPERATIONS = [
    ("/v1/checkout/sessions", "post"),
    ("/v1/checkout/sessions/{session}", "get"),
    ("/v1/checkout/sessions/{session}/expire", "post"),
]
# Not referenced by any operation: the envelope of every webhook the checks send.
EXTRA_ROOTS = ["event"]
FIXTURES = ["checkout.session", "event"]
SPEC_PATHS = ["openapi/spec3.json", "openapi/spec3.yaml"]
FIXTURES_PATH = "openapi/fixtures3.json"


def git(git_dir, *args):
    done = subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True)
    return done.returncode, done.stdout


def newest_commit_with_spec(git_dir):
    """The newest commit of HEAD's history whose spec3.json or spec3.yaml blob is in the snapshot
    (the store leaves out blobs of 4 MiB and more, so the newest ones are missing)."""
    _, log = git(git_dir, "log", "--format=%H", "HEAD", "--", *SPEC_PATHS)
    for commit in log.decode().split():
        for path in SPEC_PATHS:
            if git(git_dir, "cat-file", "-e", f"{commit}:{path}")[0] == 0:
                return commit
    sys.exit(f"no commit of {git_dir} has its spec3.json or spec3.yaml in the snapshot")


def parse(text, path):
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            sys.exit("reading the YAML document needs PyYAML: pip install pyyaml")
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return json.loads(text)


def from_git(git_dir, commit):
    """(spec, fixtures, source) read from `commit` of the bare git directory."""
    commit = commit or newest_commit_with_spec(git_dir)
    _, full = git(git_dir, "rev-parse", commit)
    commit = full.decode().strip()
    for path in SPEC_PATHS:
        status, blob = git(git_dir, "show", f"{commit}:{path}")
        if status == 0:
            break
    else:
        sys.exit(f"{commit} has neither {' nor '.join(SPEC_PATHS)} in the snapshot")
    status, fixtures = git(git_dir, "show", f"{commit}:{FIXTURES_PATH}")
    if status != 0:
        sys.exit(f"{commit} has no {FIXTURES_PATH}")
    _, tag = git(git_dir, "tag", "--points-at", commit)
    tag = tag.decode().split()
    source = f"stripe/openapi@{commit}{' (' + tag[0] + ')' if tag else ''}"
    return parse(blob.decode(), path), json.loads(fixtures), f"{source} {path}", f"{source} {FIXTURES_PATH}"


def refs(node, found):
    """Adds the schema names every `$ref` under `node` points to."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.rsplit("/", 1)[-1])
            else:
                refs(value, found)
    elif isinstance(node, list):
        for value in node:
            refs(value, found)


def closure(schemas, roots):
    seen, todo = set(), set(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in schemas:
            sys.exit(f"the document references #/components/schemas/{name}, which it does not define")
        seen.add(name)
        found = set()
        refs(schemas[name], found)
        todo |= found - seen
    return seen


def subset(spec, source):
    paths = {}
    for path, method in OPERATIONS:
        operation = spec.get("paths", {}).get(path, {}).get(method)
        if operation is None:
            sys.exit(f"the document has no {method.upper()} {path}")
        paths.setdefault(path, {})[method] = operation
    roots = set(EXTRA_ROOTS)
    refs(paths, roots)
    schemas = spec["components"]["schemas"]
    names = closure(schemas, roots)
    return {
        "openapi": spec["openapi"],
        "info": spec["info"],
        "x-source": source,
        "x-extracted-by": "tests/stripe/extract.py: the operations verbatim, and the $ref closure of their "
                          "schemas and of `event`, verbatim; nothing pruned",
        "paths": paths,
        "components": {"schemas": {name: schemas[name] for name in sorted(names)}},
    }


def fixtures_subset(fixtures, source):
    resources = fixtures["resources"]
    missing = [name for name in FIXTURES if name not in resources]
    if missing:
        sys.exit(f"fixtures3.json has no {missing}")
    return {"x-source": source, "resources": {name: resources[name] for name in FIXTURES}}


# ---- Stripe's Python library: its typed parameters as a JSON Schema ----

def library_params():
    """`SessionCreateParams` of the installed `stripe` package as a JSON Schema (draft 2020-12):
    each TypedDict a `$defs` entry closed with `additionalProperties: false`, `NotRequired` keys
    optional and the others required, `Literal[...]` a closed enum and `Literal[...]|str` an
    open one (`x-known`, not enforced: Stripe's library leaves room for new values)."""
    try:
        import stripe
        from stripe.params.checkout import _session_create_params as module
        from stripe._request_options import RequestOptions
    except ImportError as error:
        sys.exit(f"Stripe's Python library is needed (pip install -r tests/requirements.txt): {error}")
    from typing_extensions import NotRequired, Required, is_typeddict
    namespace = vars(module)
    skip = set(RequestOptions.__annotations__)  # api_key, idempotency_key…: options, not parameters
    defs = {}

    def evaluate(annotation):
        if isinstance(annotation, str):
            return eval(annotation, namespace)  # noqa: S307 (the library's own annotations)
        if isinstance(annotation, typing.ForwardRef):
            return eval(annotation.__forward_arg__, namespace)  # noqa: S307
        return annotation

    def convert(annotation):
        annotation = evaluate(annotation)
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin in (NotRequired, Required):
            return convert(args[0])
        if annotation is str:
            return {"type": "string"}
        if annotation is bool:
            return {"type": "boolean"}
        if annotation is int:
            return {"type": "integer"}
        if annotation is float:
            return {"type": "number"}
        if getattr(annotation, "__name__", "") == "Decimal":
            return {"type": "string", "format": "decimal"}
        if annotation is typing.Any:
            return {}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            choices = [convert(a) for a in args]
            literals = [c for c in choices if set(c) == {"enum"}]
            if {"type": "string"} in choices and literals:
                # Literal[...]|str: any string, the known values recorded
                known = [v for c in literals for v in c["enum"]]
                rest = [c for c in choices if c not in literals and c != {"type": "string"}]
                open_enum = {"type": "string", "x-known": known}
                return open_enum if not rest else {"anyOf": [open_enum, *rest]}
            unique = []
            for choice in choices:
                if choice not in unique:
                    unique.append(choice)
            return unique[0] if len(unique) == 1 else {"anyOf": unique}
        if origin in (list, typing.List):
            return {"type": "array", "items": convert(args[0])}
        if origin in (dict, typing.Dict) or getattr(origin, "__name__", "") == "UntypedStripeObject":
            value = convert(args[-1]) if args else {}
            return {"type": "object", "additionalProperties": value}
        if getattr(annotation, "__name__", "") == "UntypedStripeObject":
            return {"type": "object"}
        if is_typeddict(annotation):
            name = annotation.__name__
            if name not in defs:
                defs[name] = {}  # placed first: a TypedDict may reach itself
                defs[name] = typed_dict(annotation)
            return {"$ref": f"#/$defs/{name}"}
        sys.exit(f"library-params: no JSON Schema for {annotation!r}")

    def typed_dict(cls):
        properties = {key: convert(value) for key, value in cls.__annotations__.items() if key not in skip}
        required = sorted(k for k in cls.__required_keys__ if k not in skip)
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        return schema

    root = typed_dict(module.SessionCreateParams)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "SessionCreateParams",
        "x-source": f"stripe (PyPI) {stripe.VERSION}, stripe.params.checkout.SessionCreateParams",
        "x-api-version": stripe.api_version,
        **root,
        "$defs": {name: defs[name] for name in sorted(defs)},
    }


def write(path, document):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path):,} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", help="a bare git directory of stripe/openapi (the search tool's fetch)")
    parser.add_argument("--commit", help="with --git-dir: the commit to read (default: the newest whose document is there)")
    parser.add_argument("--spec", help="spec3.json or spec3.yaml at hand")
    parser.add_argument("--fixtures", help="fixtures3.json at hand (with --spec)")
    parser.add_argument("--source", help="with --spec: where the files came from, e.g. 'stripe/openapi@SHA openapi/spec3.json'")
    parser.add_argument("--out", default=HERE, help="where to write the three files (default: beside this script)")
    args = parser.parse_args()
    if args.git_dir:
        spec, fixtures, spec_source, fixtures_source = from_git(args.git_dir, args.commit)
    elif args.spec and args.fixtures and args.source:
        with open(args.spec, encoding="utf-8") as f:
            spec = parse(f.read(), args.spec)
        with open(args.fixtures, encoding="utf-8") as f:
            fixtures = json.load(f)
        spec_source = args.source
        fixtures_source = args.source.split(" ")[0] + " " + FIXTURES_PATH
    else:
        parser.error("give --git-dir, or --spec, --fixtures and --source")
    document = subset(spec, spec_source)
    write(os.path.join(args.out, "openapi-subset.json"), document)
    write(os.path.join(args.out, "fixtures-subset.json"), fixtures_subset(fixtures, fixtures_source))
    write(os.path.join(args.out, "library-params.json"), library_params())
    print(f"Stripe API version {document['info']['version']} ({spec_source}); "
          f"{len(document['components']['schemas'])} schemas")


if __name__ == "__main__":
    main()
