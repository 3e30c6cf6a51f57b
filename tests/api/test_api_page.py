"""The HTTP API page of the docs (docs/http-api.md) and the OpenAPI document say the same: every operation, status
code and field the page names is in the document, and every operation of the document is on the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from taskq.queues.api.openapi import document

#: Where the API's user documentation lives (from the repository root).
API_DOC = "docs/http-api.md"

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/api/v1"
OPERATION = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`\s]*)`")
STATUS = re.compile(r"(?<![\w.,-])([245]\d\d)(?![\w.,-])")
NAME = re.compile(r"`([a-z][a-z0-9_]*)`")
#: Statuses the section may name that no operation lists: OpenAPI has no place for the 405 a path answers to a
#: method it lacks (the document's Error codes include method_not_allowed).
UNLISTED_STATUSES = {"405"}
#: Backticked words of the section that are not names of the API: JSON values, a token's namespace in an example,
#: nginx's setting, the pseudo-field of a body that is not JSON, and offset, named to say it is refused.
NOT_API_NAMES = {"true", "false", "null", "shop", "client_max_body_size", "body", "offset"}


def api_section() -> str:
    """The text of the HTTP API page."""
    return (ROOT / API_DOC).read_text()


def shape(path: str) -> str:
    """A path with its parameters unnamed, so ``{q}`` in the prose matches ``{queue}`` in the document."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def documented_operations() -> set[tuple[str, str]]:
    return {(method.upper(), shape(path)) for path, item in document()["paths"].items() for method in item}


def vocabulary(node: Any, found: set[str]) -> set[str]:
    """Every name the document gives a client: properties, parameters, enum values, operation ids."""
    if isinstance(node, dict):
        found.update(node.get("properties", {}))
        if isinstance(node.get("enum"), list):
            found.update(str(v) for v in node["enum"])
        if node.get("in") in ("query", "path", "header"):
            found.add(node["name"])
        if "operationId" in node:
            found.add(node["operationId"])
        for value in node.values():
            vocabulary(value, found)
    elif isinstance(node, list):
        for value in node:
            vocabulary(value, found)
    return found


def test_every_operation_of_the_document_is_in_the_section_and_back():
    named = {(method, shape(PREFIX + path)) for method, path in OPERATION.findall(api_section())}
    assert named == documented_operations(), named ^ documented_operations()


def test_every_status_the_section_names_is_documented():
    statuses = {status for item in document()["paths"].values() for op in item.values() for status in op["responses"]}
    named = set(STATUS.findall(api_section()))
    assert named and named <= statuses | UNLISTED_STATUSES, named - statuses


def test_every_field_the_section_names_is_in_the_document():
    names = set(NAME.findall(api_section())) - NOT_API_NAMES
    assert {"ttr", "payload_base64", "next_cursor", "lease"} <= names
    assert names <= vocabulary(document(), set()), names - vocabulary(document(), set())
