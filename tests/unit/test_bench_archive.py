"""bench.archive.server_info: a JSON object, key redacted, the old endpoint as fallback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.archive import CollectError, server_info
from bench.server import REDACTED

Answers = dict[str, object]


@pytest.fixture
def serve() -> Iterator[tuple[str, Answers]]:
    """A server answering GET <path> with answers[path] as JSON (404 when absent)."""
    answers: Answers = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in answers:
                self.send_error(404)
                return
            body = json.dumps(answers[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", answers
    httpd.shutdown()
    httpd.server_close()


def test_redacts_the_key(serve) -> None:
    url, answers = serve
    answers["/server_info"] = {"api_key": "sk-1", "version": "0.5.23"}
    assert server_info(url, None) == {"api_key": REDACTED, "version": "0.5.23"}


def test_an_answer_that_is_not_an_object_falls_back_to_the_old_endpoint(serve) -> None:
    url, answers = serve
    answers["/server_info"] = ["not", "an", "object"]
    answers["/get_server_info"] = {"version": "0.5.11"}
    assert server_info(url, None) == {"version": "0.5.11"}


def test_no_usable_answer_is_an_error(serve) -> None:
    url, answers = serve
    answers["/server_info"] = "text"
    with pytest.raises(CollectError, match="did not answer"):
        server_info(url, None, timeout=5.0)
