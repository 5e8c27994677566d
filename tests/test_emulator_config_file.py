"""The emulator reads SGLang's --config YAML like the real server (the unit passes the key so)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "emulator"))

from sglang_emulator.config_file import merge_config_with_args


def test_config_options_come_first_so_the_command_line_wins(tmp_path: Path) -> None:
    config = tmp_path / "args.yaml"
    config.write_text('api-key: "k-1 \\"quoted\\""\nport: 4000\nenable-metrics: true\n')
    argv = ["--model-path", "/m", "--config", str(config), "--port", "5000"]
    merged = merge_config_with_args(argv, store_true={"enable_metrics"})
    assert merged == [
        "--api-key",
        'k-1 "quoted"',
        "--port",
        "4000",
        "--enable-metrics",
        "--model-path",
        "/m",
        "--port",
        "5000",
    ]


def test_without_config_argv_is_unchanged() -> None:
    assert merge_config_with_args(["--port", "1"], store_true=set()) == ["--port", "1"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("args.json", "{}", "must be YAML"),
        ("missing.yaml", None, "not found"),
        ("bad.yaml", "no colon here\n", "cannot parse"),
    ],
)
def test_bad_config_files_fail_like_sglang(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        merge_config_with_args(["--config", str(path)], store_true=set())
