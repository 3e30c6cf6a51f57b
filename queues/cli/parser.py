"""The argument parser of ``manage.py tasks``: argparse subparsers, one group per module.

Two departures from plain argparse, both for scripts that drive the CLI:

* ``--json`` is accepted at every level (``tasks --json queue ls``, ``tasks queue ls --json``). Below the top
  level its default is SUPPRESS, so a subparser that does not see the flag leaves the top level's value alone.
* A usage error raises :class:`UsageError` instead of printing the usage block and exiting, so the entry point
  can report it on one line with exit status 2.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import math
from collections.abc import Callable
from typing import Any, NoReturn

from taskq.queues.engine import nesting
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.validation import text_problem

PROG = "tasks"


class UsageError(Exception):
    """The command line is malformed; ``prog`` names the (sub)command whose parser refused it."""

    def __init__(self, message: str, prog: str = PROG) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """ArgumentParser that raises UsageError; subparsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


def json_flag(parser: argparse.ArgumentParser, top: bool = False) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="print one JSON document on stdout instead of text",
    )


def subcommands(parser: argparse.ArgumentParser, title: str) -> argparse._SubParsersAction[Any]:
    sub = parser.add_subparsers(title=title, metavar="COMMAND", parser_class=Parser)
    sub.required = True
    return sub


def command(
    sub: argparse._SubParsersAction[Any],
    name: str,
    run: Callable[..., Any],
    help_text: str,
) -> argparse.ArgumentParser:
    """A leaf command: gets ``--json`` and remembers the function that runs it."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    json_flag(parser)
    parser.set_defaults(run=run, command_name=name)
    return parser


def group(sub: argparse._SubParsersAction[Any], name: str, help_text: str) -> argparse._SubParsersAction[Any]:
    """A command group (``queue``, ``task``, ``server``) whose subcommands are the leaves."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    json_flag(parser)
    return subcommands(parser, f"{name} commands")


def unencodable_argument(args: argparse.Namespace) -> str | None:
    """Why a string of the parsed command line breaks the rule for every string (``validation.text_problem``),
    naming its option, or None. A command line's bytes that are not UTF-8 reach Python as lone surrogates
    (``surrogateescape``); refused here, before any command runs, whatever the command does with them."""
    for dest, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            problem = text_problem(item) if isinstance(item, str) else None
            if problem:
                return f"{dest.replace('_', ' ')} {shown(item)} {problem}"
    return None


# -- argument types: each raises ArgumentTypeError, which argparse reports as a usage error -----------------


def _int_at_least(text: str, low: int, expected: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {shown(text)}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    return _int_at_least(text, 0, "an integer >= 0")


def _seconds(text: str, allow_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {shown(text)}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        low = ">= 0" if allow_zero else "> 0"
        raise argparse.ArgumentTypeError(f"expected a number of seconds {low}, got {shown(text)}")
    return value


def positive_seconds(text: str) -> float:
    return _seconds(text, allow_zero=False)


def non_negative_seconds(text: str) -> float:
    return _seconds(text, allow_zero=True)


def json_value(text: str) -> Any:
    """JSON text, parsed to the payload's depth limit (``TASKS_MAX_PAYLOAD_DEPTH``, read from the settings),
    without recursing past it; an object that gives a key twice is refused, as the HTTP API refuses it."""
    from taskq.queues.conf import taskq_settings  # settings: read on use, so ``tasks --help`` needs no Django set up

    limit = taskq_settings().max_payload_depth
    try:
        return nesting.loads(text, limit, unique_keys=True)
    except nesting.TooDeepError:
        raise argparse.ArgumentTypeError(
            f"the payload is nested deeper than {limit} levels of arrays and objects (the limit is "
            "TASKS_MAX_PAYLOAD_DEPTH)"
        ) from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {nesting.reason(exc)}") from None


def base64_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise argparse.ArgumentTypeError(
            "not valid base64 (A-Z a-z 0-9 + /, in groups of four, padded with =)"
        ) from None
