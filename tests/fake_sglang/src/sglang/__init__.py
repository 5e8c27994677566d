"""Test-only stand-in for the `sglang` distribution: its server is the project's emulator."""

from sglang.version import __version__

__all__ = ["__version__"]
