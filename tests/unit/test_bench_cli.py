import socket

import pytest

from bench.cli import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--contexts", "512,x"], "not an integer list"),
        (["--contexts", "0"], "positive integers"),
        (["--categories", "poetry"], "--categories"),
        (["--url", "localhost:1"], "--url must start"),
        (["--request-timeout", "0"], "--request-timeout"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(tmp_path, capsys, extra, message):
    args = [
        "run",
        "--url",
        "http://127.0.0.1:1",
        "--contexts",
        "512",
        "--concurrency",
        "1",
        "--out",
        str(tmp_path / "o"),
    ]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not (tmp_path / "o").exists()


def test_unreachable_server_is_reported_before_any_output(tmp_path, capsys):
    url = f"http://127.0.0.1:{_free_port()}"
    rc = main(
        [
            "run",
            "--url",
            url,
            "--contexts",
            "512",
            "--concurrency",
            "1",
            "--out",
            str(tmp_path / "o"),
            "--no-live",
        ]
    )
    assert rc == 3
    err = capsys.readouterr().err
    assert "cannot reach" in err and url in err
    assert list((tmp_path / "o").glob("*.json")) == []


def test_argparse_rejects_missing_required(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--url", "http://x"])
    assert e.value.code == 2
