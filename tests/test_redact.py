"""What `proctor._redact` masks, and what it leaves alone."""

from __future__ import annotations

import base64
import logging

import pytest

from proctor._redact import (
    install_log_redaction,
    masking,
    redact,
    redact_excerpt,
    redact_url,
    remember_credential,
    remember_environment_secrets,
    remember_header,
    remember_headers,
    remember_secret,
    remember_url_credentials,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://alice:s3cret@host:8080/v1", "http://alice:***@host:8080/v1"),
        ("redis://:pw@localhost:6379/0", "redis://***@localhost:6379/0"),
        ("https://ghp_token@github.com/x", "https://***@github.com/x"),
        ("http://h/p?api_key=abc&page=2", "http://h/p?api_key=***&page=2"),
        ("http://h/p?X-Api-Key=abc&access_token=t&sig=s", "http://h/p?X-Api-Key=***&access_token=***&sig=***"),
        ("http://h/p?monkey=1&keyboard=2", "http://h/p?monkey=1&keyboard=2"),  # names that merely contain "key"
        ("http://127.0.0.1:8000/chat", "http://127.0.0.1:8000/chat"),
        ("not a url", "not a url"),
    ],
)
def test_urls(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_text_with_urls_and_remembered_secrets() -> None:
    remember_secret("sk-remembered-0001")
    remember_secret("ab")  # too short to mask everywhere: ignored
    text = "POST http://u:pw@h/x?token=t failed; header was sk-remembered-0001 (ab)"
    assert redact(text) == "POST http://u:***@h/x?token=*** failed; header was *** (ab)"
    assert redact("nothing secret here") == "nothing secret here"


def test_log_records_of_httpx_and_proctor_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    install_log_redaction()
    install_log_redaction()  # idempotent
    caplog.set_level(logging.INFO)
    logging.getLogger("httpx").info('HTTP Request: %s %s "%s"', "POST", "http://u:pw-log@h/v1", "HTTP/1.1 200 OK")
    logging.getLogger("proctor.service.consumer").warning("cannot reach redis://:pw-log@h:6379/0")
    logging.getLogger("other").info("http://u:pw-other@h")  # not ours: left alone
    # the A2A and MCP SDKs' transports (httpx2) and the A2A SDK log URLs with their userinfo
    logging.getLogger("httpx2").info("HTTP Request: DELETE http://u:pw-sdk@h/mcp")
    logging.getLogger("a2a.client.card_resolver").info("Successfully fetched agent card data from http://u:pw-a2a@h")
    logging.getLogger("mcp.client.streamable_http").info("GET http://u:pw-mcp@h/mcp")
    messages = [record.getMessage() for record in caplog.records]
    assert messages[:2] == [
        'HTTP Request: POST http://u:***@h/v1 "HTTP/1.1 200 OK"',
        "cannot reach redis://***@h:6379/0",
    ]
    assert messages[2] == "http://u:pw-other@h"
    assert messages[3:] == [
        "HTTP Request: DELETE http://u:***@h/mcp",
        "Successfully fetched agent card data from http://u:***@h",
        "GET http://u:***@h/mcp",
    ]


def test_credentials_sent_in_headers_are_remembered_in_every_form_a_server_may_echo() -> None:
    basic = base64.b64encode(b"hdr-user:hdr-pass-0002").decode()
    remember_header("Authorization", "Bearer sk-hdr-bearer-0001")
    remember_header("Proxy-Authorization", f"Basic {basic}")
    remember_header("X-Api-Key", "k-hdr-raw-0003")
    remember_headers({"api-key": "k-hdr-azure-0004", "Content-Type": "application/json-0005", "X-Trace": "t-0006"})
    remember_credential("ab")  # too short to mask everywhere: ignored
    echoed = (
        f"invalid: Bearer sk-hdr-bearer-0001 / Basic {basic} / hdr-pass-0002 / k-hdr-raw-0003 / k-hdr-azure-0004 "
        "/ application/json-0005 t-0006 ab"
    )
    assert redact(echoed) == (
        "invalid: Bearer *** / Basic *** / *** / *** / *** / application/json-0005 t-0006 ab"
    )  # a header that carries no credential is not remembered


def test_url_credentials_are_remembered_as_password_basic_form_token_and_secret_query_values() -> None:
    remember_url_credentials("http://url-user:url-p%40ss-0007@h:1/x?api_key=url-key-0008&page=url-page-0009")
    remember_url_credentials("https://ghp_urltoken0010@github.com/x")
    remember_url_credentials("not a url")
    basic = base64.b64encode(b"url-user:url-p@ss-0007").decode()
    token_basic = base64.b64encode(b"ghp_urltoken0010:").decode()
    echoed = (
        f"got {basic} and url-p@ss-0007 / url-p%40ss-0007, url-key-0008, {token_basic} ghp_urltoken0010 url-page-0009"
    )
    assert redact(echoed) == "got *** and *** / ***, ***, *** *** url-page-0009"
    assert redact("url-user") == "url-user"  # the user name beside a password is no secret


def test_excerpts_are_masked_before_they_are_cut() -> None:
    remember_secret("sk-excerpt-secret-0011")
    text = "x" * 190 + "sk-excerpt-secret-0011" + "y" * 100
    cut = redact_excerpt(text, 200)
    assert "sk-excerpt" not in cut and cut == "x" * 190 + "***" + "y" * 7 + "..."
    assert redact_excerpt({"k": "sk-excerpt-secret-0011"}, 200) == "{'k': '***'}"
    assert redact_excerpt("short", 200) == "short"


def test_masking_holds_only_inside_its_block() -> None:
    assert redact("session tok-scoped-0012") == "session tok-scoped-0012"
    with masking("tok-scoped-0012", "ab"):
        assert redact("session tok-scoped-0012 ab") == "session *** ab"
    assert redact("session tok-scoped-0012") == "session tok-scoped-0012"


def test_environment_secrets_an_sdk_reads_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "env-api-key-0013")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-aws-secret-0014")
    monkeypatch.setenv("PROCTOR_ENV_LABEL", "env-label-0015")
    monkeypatch.setenv("NAMED_ONLY", "env-named-0016")
    remember_environment_secrets()
    remember_environment_secrets("NAMED_ONLY", "UNSET_VARIABLE_0017")
    assert redact("env-api-key-0013 env-aws-secret-0014 env-label-0015 env-named-0016") == "*** *** env-label-0015 ***"
