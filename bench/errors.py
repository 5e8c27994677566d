"""Errors the CLI turns into one clear line each, raised before any load is sent."""

from __future__ import annotations


class BenchError(Exception):
    """Base class: the message is meant for the operator, no traceback needed."""

    exit_code = 1


class BadArguments(BenchError):
    exit_code = 2


class DatasetError(BadArguments):
    """A user's dataset file (`dataset=PATH`) cannot be read or has a bad record."""


class ServerUnreachable(BenchError):
    exit_code = 3


class AuthError(BenchError):
    exit_code = 4


class ContextTooLong(BenchError):
    exit_code = 5


class ServerError(BenchError):
    """The server answered, but not in a way a benchmark can use (e.g. /generate fails)."""

    exit_code = 6
