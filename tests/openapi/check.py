"""Validation against the served OpenAPI document, shared by the Python flow and the check
of the TypeScript flow's record: JSON Schema 2020-12 with format checking, `$ref`s resolved
inside the document."""

import json
import re

import jsonschema
from jsonschema import Draft202012Validator


class Document:
    def __init__(self, doc: dict):
        self.doc = doc

    def _validate(self, schema: dict, instance, where: str) -> None:
        # The document is the root resource, so `#/components/...` resolves; the schema to
        # check sits under `$defs`.
        root = dict(self.doc)
        root["$defs"] = {"target": schema}
        root["$ref"] = "#/$defs/target"
        validator = Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
            raise AssertionError(f"{where}: the answer does not match the document: {details}")

    def operation(self, method: str, template: str) -> dict:
        try:
            return self.doc["paths"][template][method.lower()]
        except KeyError:
            raise AssertionError(f"{method} {template} is not in the document")

    def check_answer(self, method: str, template: str, status: int, content_type: str, body: bytes) -> None:
        """The status is declared, and a JSON body matches its declared schema."""
        where = f"{method} {template} -> {status}"
        responses = self.operation(method, template)["responses"]
        response = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
        assert response is not None, f"{where}: status not declared"
        media = (content_type or "").split(";")[0].strip()
        content = response.get("content", {})
        if not body and not content:
            return
        assert media in content, f"{where}: {media!r} is not among {list(content)}"
        if "json" in media:
            self._validate(content[media]["schema"], json.loads(body), where)

    def check_webhook(self, event_type: str, headers: dict, body: bytes) -> dict:
        """A delivery matches the `webhooks` entry of its type: headers and body."""
        post = self.doc["webhooks"][event_type]["post"]
        lower = {k.lower(): v for k, v in headers.items()}
        for parameter in post["parameters"]:
            value = lower.get(parameter["name"].lower())
            assert value is not None, f"webhook {event_type}: no {parameter['name']} header"
            assert re.search(parameter["schema"]["pattern"], value), f"{parameter['name']}: {value!r}"
        payload = json.loads(body)
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        self._validate(schema, payload, f"webhook {event_type}")
        return payload


def formats_are_checked() -> None:
    """date-time is only checked when its checker's package is installed: make sure it is."""
    checker = Draft202012Validator.FORMAT_CHECKER
    try:
        checker.check("not a date-time", "date-time")
    except jsonschema.FormatError:
        return
    raise SystemExit("jsonschema does not check date-time here: pip install -r tests/requirements.txt")
