"""`proctor._http.HttpClient` against real loopback servers: proxies from the environment, TLS with the shared
context, failures classified, and a client that outlives its event loop."""

from __future__ import annotations

import datetime
import json
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from proctor._http import (
    ConnectFailed,
    ConnectionLost,
    HttpClient,
    HttpResponse,
    ReplyTimeout,
    RequestInvalid,
    decode_json,
    encode_json,
)
from proctor._tls import shared_ssl_context

pytestmark = pytest.mark.anyio

BODY = b'{"ok": true}'


class _Recorder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mode: str, context: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = mode
        self.context = context
        self.requests: list[tuple[str, dict[str, str]]] = []

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True)
        return sock, address

    @property
    def url(self) -> str:
        scheme = "https" if self.context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}"


class _Handler(socketserver.StreamRequestHandler):
    """Reads one request head, records it, then answers as the server's mode says."""

    server: _Recorder

    def handle(self) -> None:
        try:
            line = self.rfile.readline().decode("latin-1").strip()
        except (OSError, ssl.SSLError):
            return
        headers: dict[str, str] = {}
        while (header := self.rfile.readline().decode("latin-1").strip()) != "":
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.rfile.read(int(headers.get("content-length", "0")))
        self.server.requests.append((line, headers))
        if self.server.mode == "hang-up":
            return
        if self.server.mode == "silent":
            time.sleep(1.0)
            return
        cookie = b"Set-Cookie: sid=s-1; Path=/\r\n" if self.server.mode == "cookie" else b""
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\n" + cookie + b"Content-Type: application/json; charset=latin-1\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)
        )


@contextmanager
def recorder(mode: str = "answer", context: ssl.SSLContext | None = None) -> Iterator[_Recorder]:
    server = _Recorder(mode, context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


async def fetch(client: HttpClient, url: str, **options: object) -> HttpResponse:
    try:
        timeout = float(options.pop("timeout", 5.0))  # type: ignore[arg-type]
        return await client.request("POST", url, request_timeout=timeout, **options)  # type: ignore[arg-type]
    finally:
        await client.aclose()


async def test_requests_go_through_the_environments_proxy_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with recorder() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://agent:s3cret@127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        response = await fetch(HttpClient(max_connections=2), "http://agent.example/v1/chat", json_body={"a": 1})
    assert response.status_code == 200 and response.content == BODY
    line, headers = proxy.requests[0]
    assert line == "POST http://agent.example/v1/chat HTTP/1.1"  # absolute form: a proxy request
    assert headers["proxy-authorization"] == "Basic YWdlbnQ6czNjcmV0"  # agent:s3cret
    assert headers["host"] == "agent.example"


async def test_no_proxy_hosts_are_reached_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    with recorder() as proxy, recorder() as agent:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        response = await fetch(HttpClient(max_connections=2), f"{agent.url}/v1/chat")
    assert response.status_code == 200
    assert proxy.requests == []
    assert agent.requests[0][0] == "POST /v1/chat HTTP/1.1"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), and its key."""
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_tls_is_verified_with_the_ca_bundle_the_environment_names(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with recorder(context=context) as agent:
        shared_ssl_context.cache_clear()
        try:
            with pytest.raises(ConnectFailed, match="certificate verify failed"):  # certifi's bundle: unknown CA
                await fetch(HttpClient(max_connections=1), f"{agent.url}/chat")
            shared_ssl_context.cache_clear()
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            response = await fetch(HttpClient(max_connections=1), f"{agent.url}/chat")
        finally:
            shared_ssl_context.cache_clear()
    assert response.status_code == 200 and response.url == f"{agent.url}/chat"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_failures_are_classified() -> None:
    with pytest.raises(ConnectFailed) as refused:
        await fetch(HttpClient(max_connections=1), f"http://127.0.0.1:{_closed_port()}/")
    assert refused.value.retryable and isinstance(refused.value.cause, ConnectionRefusedError)
    with recorder("silent") as silent:
        started = time.perf_counter()
        with pytest.raises(ReplyTimeout) as slow:
            await fetch(HttpClient(max_connections=1), silent.url, timeout=0.2)
        assert time.perf_counter() - started < 0.9 and not slow.value.retryable
    with recorder("hang-up") as hang_up, pytest.raises(ConnectionLost, match="server disconnected") as lost:
        await fetch(HttpClient(max_connections=1), hang_up.url)
    assert lost.value.retryable
    with pytest.raises(RequestInvalid) as invalid:
        await fetch(HttpClient(max_connections=1), "ftp://127.0.0.1/file")
    assert not invalid.value.retryable


async def test_a_client_sends_again_and_again_to_the_urls_it_knows() -> None:
    # URLs are parsed once per client (the first 64): later requests to them, and to new ones, are the same
    client = HttpClient(max_connections=2)
    with recorder() as agent:
        try:
            paths = [f"/v1/{n % 3}" for n in range(6)] + [f"/many/{n}" for n in range(70)]
            answers = [await client.request("GET", agent.url + path, request_timeout=5.0) for path in paths]
            with pytest.raises(RequestInvalid):
                await client.request("GET", "http://127.0.0.1:99999/", request_timeout=5.0)
        finally:
            await client.aclose()
    assert [answer.url for answer in answers] == [agent.url + path for path in paths]
    assert [line for line, _ in agent.requests] == [f"GET {path} HTTP/1.1" for path in paths]


async def test_credentials_in_the_url_are_sent_as_basic_auth() -> None:
    with recorder() as agent:
        url = agent.url.replace("http://", "http://judge:p%40ss@") + "/v1/chat"
        client = HttpClient(max_connections=1, headers={"Authorization": "Bearer default"})
        response = await fetch(client, url)
    assert response.status_code == 200 and "judge" not in response.url
    line, headers = agent.requests[0]
    assert line == "POST /v1/chat HTTP/1.1"
    assert headers["authorization"] == "Basic anVkZ2U6cEBzcw=="  # judge:p@ss


async def test_cookies_an_agent_sets_are_sent_back() -> None:
    client = HttpClient(max_connections=1)
    with recorder("cookie") as agent:
        try:
            for _ in range(2):
                await client.request("GET", f"{agent.url}/chat", request_timeout=5.0)
        finally:
            await client.aclose()
    assert "cookie" not in agent.requests[0][1]
    assert agent.requests[1][1]["cookie"] == "sid=s-1"  # kept for 127.0.0.1, as httpx's client did


async def test_a_client_without_cookies_sends_none_back() -> None:
    client = HttpClient(max_connections=1, cookies=False, follow_redirects=False)  # a model provider's
    with recorder("cookie") as agent:
        try:
            for _ in range(2):
                assert (await client.request("GET", f"{agent.url}/chat", request_timeout=5.0)).status_code == 200
        finally:
            await client.aclose()
    assert len(agent.requests) == 2 and all("cookie" not in headers for _, headers in agent.requests)


def test_importing_the_client_does_not_import_aiohttp() -> None:
    code = "import sys, proctor._http; assert 'aiohttp' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_text_is_decoded_with_the_declared_charset() -> None:
    response = HttpResponse(200, {"Content-Type": "text/plain; charset=latin-1"}, "café".encode("latin-1"), "u")
    assert response.text == "café"
    assert HttpResponse(200, {}, "café".encode(), "u").text == "café"
    assert HttpResponse(200, {"Content-Type": "text/plain; charset=nonsense"}, b"ok\xff", "u").text == "ok\ufffd"


def test_a_client_outlives_its_event_loop() -> None:
    client = HttpClient(max_connections=2, headers={"X-Default": "yes"})

    async def send(close: bool) -> int:
        response = await client.request("GET", agent.url, request_timeout=5.0)
        if close:
            await client.aclose()
        return response.status_code

    with recorder() as agent:
        # each run has its own loop: the client opens a new session in each, closed or not in the last
        assert [anyio.run(send, close) for close in (True, False, True)] == [200, 200, 200]
    assert [headers["x-default"] for _, headers in agent.requests] == ["yes", "yes", "yes"]


def _standard(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def test_bodies_are_encoded_as_the_standard_library_writes_them() -> None:
    texts = ["", 'a"b\\c', "\n\r\t\b\f", "\x00\x1f\x7f", "é€𝄞", "\u2028\u2029", "</script>"]
    for text in texts:
        body = {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0.0, "n": 10**18}
        assert encode_json(body) == _standard(body)
    assert encode_json({"a": None, 1: [True, False]}) == b'{"a":null,"1":[true,false]}'  # as json.dumps writes
    assert encode_json(2**70) == b"1180591620717411303424"  # beyond orjson: the standard library's
    assert json.loads(encode_json([1e-05, 1e16])) == [1e-05, 1e16]  # the same numbers, maybe spelt otherwise


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (float("nan"), ValueError),  # JSON has no NaN: refused, never sent as null
        ({"t": [float("inf")]}, ValueError),
        ({"when": datetime.date(2026, 11, 29)}, TypeError),  # not JSON, as before
        ({"s": "\ud800"}, UnicodeEncodeError),  # a lone surrogate cannot be sent as UTF-8
    ],
)
def test_bodies_that_are_not_json_are_refused(value: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        encode_json(value)


def test_bodies_are_decoded_as_the_standard_library_reads_them() -> None:
    assert decode_json(b'{"a": [1, 2.5, null, true], "b": "\\u00e9"}') == {"a": [1, 2.5, None, True], "b": "é"}
    big = decode_json(b'{"n": 123456789012345678901234567890, "x": NaN}')  # beyond orjson: the standard library
    assert big["n"] == 123456789012345678901234567890 and big["x"] != big["x"]
    assert decode_json(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}  # not a float
    assert decode_json('{"utf16": 1}'.encode("utf-16")) == {"utf16": 1}
    with pytest.raises(ValueError):
        decode_json(b"<html>")
