import pytest
from conftest import free_port

from bench.cli import main


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--contexts", "512,x"], "not an integer list"),
        (["--contexts", "0"], "positive integers"),
        (["--categories", "poetry"], "--categories"),
        (["--url", "localhost:1"], "--url must start"),
        (["--request-timeout", "0"], "--request-timeout"),
        (["--request-rate", "2,0"], "--request-rate must be a positive number, got 0.0"),
        (["--request-rate", "-1"], "--request-rate must be a positive number, got -1.0"),
        (["--request-rate", "fast"], "--request-rate must be a positive number, got 'fast'"),
        (["--request-rate", "inf"], "--request-rate must be a positive number, got inf"),
        (["--request-rate", "1", "--burstiness", "0"], "--burstiness must be a positive"),
        (["--request-rate", "1", "--burstiness", "x"], "--burstiness must be a positive number"),
        (["--request-rate", "1", "--max-concurrency", "0"], "--max-concurrency must be a pos"),
        (["--request-rate", "1", "--max-concurrency", "2.5"], "got '2.5'"),
        (["--request-rate", "1", "--max-send-lag-ms", "-5"], "--max-send-lag-ms must be"),
        (["--request-rate", "1", "--open-loop-seconds", "0"], "--open-loop-seconds must be"),
        (["--max-concurrency", "4"], "--max-concurrency applies to open-loop cells"),
        (["--burstiness", "2"], "--burstiness applies to open-loop cells"),
        (["--more-repetitions", "{"], "--more-repetitions: not JSON"),
        (
            [
                "--more-repetitions",
                '{"objective": "speed", "best": 1, "best_repetitions": 3, "ss": 0, "df": 0}',
            ],
            "--more-repetitions: objective='speed': not one of throughput, tpot, goodput",
        ),
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


def test_a_run_needs_concurrency_or_a_request_rate(tmp_path, capsys):
    out = tmp_path / "o"
    args = ["run", "--url", "http://127.0.0.1:1", "--contexts", "512", "--out", str(out)]
    assert main(args) == 2
    assert "give --concurrency (closed-loop cells), --request-rate" in capsys.readouterr().err
    assert not out.exists()


def test_unreachable_server_is_reported_before_any_output(tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
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


@pytest.mark.parametrize(
    "extra",
    [
        ["--requests", "32"],  # once silently --requests-per-slot 32
        ["--requests=32"],
        ["--min", "3"],
        ["--redo-f"],
    ],
)
def test_option_prefixes_are_not_abbreviations(tmp_path, capsys, extra):
    args = ["run", "--url", "http://127.0.0.1:1", "--contexts", "512", "--concurrency", "1"]
    with pytest.raises(SystemExit) as e:
        main([*args, "--out", str(tmp_path / "o"), *extra])
    assert e.value.code == 2
    assert f"unrecognized arguments: {extra[0]}" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_speedup_refuses_option_prefixes(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["speedup", str(tmp_path / "a"), str(tmp_path / "b"), "--js"])
    assert e.value.code == 2
    assert "unrecognized arguments: --js" in capsys.readouterr().err


def test_argparse_rejects_missing_required(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--url", "http://x"])
    assert e.value.code == 2


def test_progress_live_line_and_plain_log():
    import io

    from bench.progress import Progress

    live = io.StringIO()
    p = Progress(2, 16, stream=live, live=True)
    p.start_cell("ctx512-c4-out64-random-r0", 8)
    p.update(3, 4)
    text = live.getvalue()
    assert "\r" in text and "requests 3/8 in flight 4" in text and "ETA" in text
    plain = io.StringIO()
    q = Progress(2, 16, stream=plain, live=False)
    q.start_cell("c", 8)
    q.update(3, 4)
    q.end_cell("ok")
    out = plain.getvalue()
    assert "\r" not in out and "in flight" not in out
    assert out.count("\n") == 2 and "cell 1/2 done: ok" in out
