"""What `proctor._redact` masks, and what it leaves alone."""

from __future__ import annotations

import logging

import pytest

from proctor._redact import install_log_redaction, redact, redact_url, remember_secret


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
    messages = [record.getMessage() for record in caplog.records]
    assert messages[:2] == [
        'HTTP Request: POST http://u:***@h/v1 "HTTP/1.1 200 OK"',
        "cannot reach redis://***@h:6379/0",
    ]
    assert messages[2] == "http://u:pw-other@h"
