import json

import pytest

from bench.errors import ServerError
from bench.server import REDACTED, metrics_diff, parse_prometheus, redact


def test_redact_removes_api_keys_everywhere():
    info = {
        "api_key": "sekret",
        "admin_api_key": None,
        "model_path": "/m",
        "launch_command": "python3 -m sglang.launch_server --api-key sekret --port 1",
        "nested": [{"API_KEY_extra": "x"}, ["--api-key", "sekret2", "--api-key=s3"]],
    }
    out = redact(info)
    text = repr(out)
    assert "sekret" not in text and "s3'" not in text
    assert out["api_key"] == REDACTED
    assert out["admin_api_key"] is None
    assert out["model_path"] == "/m"
    assert out["launch_command"].endswith(f"--api-key {REDACTED} --port 1")
    assert out["nested"][1] == ["--api-key", REDACTED, f"--api-key={REDACTED}"]


def test_redact_quoted_key_in_command_line():
    assert "abc def" not in redact("x --api-key 'abc def' --y")


PROM_BEFORE = """# HELP x
sglang:generation_tokens_total{model_name="m"} 100
sglang:spec_verify_calls_total{model_name="m"} 40
sglang:time_to_first_token_seconds_sum{model_name="m"} 1.5
sglang:time_to_first_token_seconds_count{model_name="m"} 10
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3
sglang:num_running_reqs{model_name="m"} 0
"""
PROM_AFTER = (
    PROM_BEFORE.replace(" 100", " 400")
    .replace(" 40\n", " 140\n")
    .replace('sum{model_name="m"} 1.5', 'sum{model_name="m"} 3.5')
    .replace('count{model_name="m"} 10', 'count{model_name="m"} 20')
    .replace('num_running_reqs{model_name="m"} 0', 'num_running_reqs{model_name="m"} 2')
)


def test_parse_prometheus():
    m = parse_prometheus(PROM_BEFORE)
    assert m['sglang:generation_tokens_total{model_name="m"}'] == 100.0
    assert len(m) == 6


def test_metrics_diff_counters_gauges_and_derived():
    d = metrics_diff(parse_prometheus(PROM_BEFORE), parse_prometheus(PROM_AFTER))
    assert d["delta"]['sglang:generation_tokens_total{model_name="m"}'] == 300.0
    assert d["gauges_after"]['sglang:num_running_reqs{model_name="m"}'] == 2.0
    assert not any("_bucket" in k for k in d["delta"])
    assert d["derived"]["accept_length"] == pytest.approx(3.0)
    assert d["derived"]["time_to_first_token_seconds_mean"] == pytest.approx(0.2)


async def _vocab_server(routes: dict[str, object]):
    """An in-process server answering GET `path` with the JSON in `routes` (404 otherwise)."""
    import aiohttp
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    from bench.server import Server

    async def handle(request: web.Request) -> web.Response:
        if request.path not in routes:
            return web.Response(status=404)
        return web.json_response(routes[request.path])

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    ts = TestServer(app)
    await ts.start_server()
    session = aiohttp.ClientSession()
    return ts, session, Server(session, str(ts.make_url("")), None)


@pytest.mark.parametrize(
    "config, expected",
    [({"vocab_size": 438}, 438), ({"text_config": {"vocab_size": 262208}}, 262208)],
)
async def test_vocab_size_from_model_info_config_json(tmp_path, config, expected):
    (tmp_path / "config.json").write_text(json.dumps(config))
    ts, session, srv = await _vocab_server({"/model_info": {"model_path": str(tmp_path)}})
    try:
        assert await srv.vocab_size() == expected
    finally:
        await session.close()
        await ts.close()


async def test_vocab_size_falls_back_to_server_info_model_path(tmp_path):
    (tmp_path / "config.json").write_text('{"vocab_size": 1000}')
    ts, session, srv = await _vocab_server({"/server_info": {"model_path": str(tmp_path)}})
    try:
        assert await srv.vocab_size() == 1000
    finally:
        await session.close()
        await ts.close()


@pytest.mark.parametrize("config", [None, '{"hidden_size": 8}'])
async def test_vocab_size_unknown_is_an_error_naming_the_file(tmp_path, config):
    if config is not None:
        (tmp_path / "config.json").write_text(config)
    ts, session, srv = await _vocab_server({"/model_info": {"model_path": str(tmp_path)}})
    try:
        with pytest.raises(ServerError, match=r"no /tokenize.*config\.json"):
            await srv.vocab_size()
    finally:
        await session.close()
        await ts.close()
