"""Test-only `sglang.srt`: just enough for roles/sglang_server/files/sglang-build-facts.py."""
