"""Test-only `sglang.srt.speculative`."""
