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


async def _dropping_server(drops: int):
    """A raw HTTP server that reads a request and closes the connection without an answer on its
    first `drops` connections (a keep-alive connection the server closed as the request went
    out), then answers every request with a /server_info body. Returns it, its URL and the count
    of connections seen."""
    import asyncio

    seen = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen[0] += 1
        await reader.readuntil(b"\r\n\r\n")
        if seen[0] <= drops:
            writer.close()
            return
        body = b'{"model_path": "/m", "api_key": "sekret"}'
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    return srv, f"http://127.0.0.1:{port}", seen


@pytest.mark.parametrize(
    "pauses, drops, answered",
    [
        # aiohttp sends an idempotent request again once by itself: one drop is not enough
        ((), 3, False),
        (None, 3, True),  # the default pauses
        (None, 100, False),  # a server that never answers is named all the same
    ],
)
async def test_a_get_the_server_dropped_is_sent_again(monkeypatch, pauses, drops, answered):
    import aiohttp

    from bench import server as server_mod
    from bench.errors import ServerUnreachable

    if pauses is not None:
        monkeypatch.setattr(server_mod, "GET_RETRY_PAUSES_S", pauses)
    srv, url, seen = await _dropping_server(drops)
    try:
        async with aiohttp.ClientSession() as session:
            server = server_mod.Server(session, url, None)
            if answered:
                info = await server.server_info()
                assert info["model_path"] == "/m" and info["api_key"] == REDACTED
                assert seen[0] == drops + 1
            else:
                with pytest.raises(ServerUnreachable, match=r"cannot reach .*/server_info"):
                    await server._json("GET", "/server_info")
                assert seen[0] < drops
    finally:
        srv.close()
        await srv.wait_closed()


async def test_a_post_the_server_dropped_is_not_sent_again():
    import aiohttp

    from bench.errors import ServerUnreachable
    from bench.server import Server

    srv, url, seen = await _dropping_server(1)
    try:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(ServerUnreachable):
                await Server(session, url, None)._json("POST", "/generate", json={})
        assert seen[0] == 1
    finally:
        srv.close()
        await srv.wait_closed()
