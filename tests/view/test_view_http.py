"""The viewer's routes over HTTP on a real loopback port: pages, 404s, escaping, the token and Host checks."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import httpx
import pytest
from viewstore import CLAUDE, GPT, HOSTILE, OLDER, SCRIPT, Store, make_store

from proctor.view import ViewOptions, create_app
from servers._serve import serve_app


def get(base: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.get(base + path, timeout=10, **kwargs)  # type: ignore[arg-type]


def text_of(html: str) -> str:
    """The page's text, roughly (tags out, whitespace folded)."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_runs_page_lists_every_run_with_trends_per_model(viewer: str) -> None:
    response = get(viewer, "/")
    assert response.status_code == 200
    html = response.text
    for run_id in (GPT, CLAUDE, OLDER, HOSTILE):
        assert f'data-copy="{run_id}"' in html  # full ids, each with a copy button
    trends = re.findall(r'<div class="trend" data-model="([^"]+)"', html)
    assert trends[:1] == ["evil/&lt;script&gt;window.__pwned = 1&lt;/script&gt;"]  # the newest run's model first
    assert sorted(trends[1:]) == ["anthropic/claude-sonnet-4", "openai/gpt-4.1-mini"]
    assert html.count('class="chart trend"') == 3 * 3  # pass rate, cost, latency per model
    # GPT: 9 of 11 scored trials passed in the fixture run (95% Wilson [52%-95%]); the older copy the same
    assert '82% <span class="ci">[52%\N{EN DASH}95%]</span>' in html
    assert f'href="/compare?a={OLDER}&amp;b={GPT}"' in html  # "vs previous" of the same model
    headers = response.headers
    assert "script-src 'nonce-" in headers["content-security-policy"]
    assert "default-src 'none'" in headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", headers["content-security-policy"]).group(1)  # type: ignore[union-attr]
    assert f'<script nonce="{nonce}">' in html


def test_run_page_leads_with_what_failed_grouped_by_check_then_case(viewer: str) -> None:
    html = get(viewer, f"/runs/{GPT}").text
    failures = html.index('id="failures"')
    assert failures < html.index('id="cases"')
    groups = [unescape(g) for g in re.findall(r'<details class="failure" open data-check="([^"]+)">', html)]
    # one trial each, so by name; the errored trial is named by what happened (no check failed in it)
    assert groups == [
        "contains '2025-06-09'",
        "is-json",
        "llm-rubric: concrete dates",
        "rubric: hr-tone.rubric.md",
        "trial error: TargetTimeout",
    ]
    section = text_of(html[failures : html.index('id="cases"')])
    assert "vacation-dates" in section and "json-reply" in section
    # each failed trial links to the case page at that trial
    assert re.search(rf'href="/runs/{GPT}/cases/0#trial-3"', html)
    assert f'data-copy="{GPT}"' in html
    assert '<dd id="check-counts">19/4/0/1</dd>' in html  # the skipped check is said, not hidden
    assert "1 check was skipped (not scored)" in html


def test_case_page_shows_transcript_tool_calls_checks_and_judge(viewer: str) -> None:
    html = get(viewer, f"/runs/{GPT}/cases/0").text
    text = text_of(html)
    for expected in (
        "When is Dave on vacation?",
        "Dave has some time off in June, I think.",
        "get_time_off",
        '"name": "Dave"',  # the tool call's arguments, as JSON
        "2025-06-09",  # its result
        "No concrete dates are given.",
        "openai/gpt-4.1-mini",  # the judge model
        "Verdict",
    ):
        assert expected in text, expected
    assert [m for m in re.findall(r'<section class="trial (\w+)" id="trial-(\d)"', html)] == [
        ("passed", "1"),
        ("passed", "2"),
        ("failed", "3"),
    ]


def test_compare_page_uses_the_paired_statistics(viewer: str) -> None:
    html = get(viewer, f"/compare?a={GPT}&b={CLAUDE}").text
    text = text_of(html)
    assert "McNemar exact p =" in text and "bootstrap interval" in text
    assert re.search(
        r"B against A: <span class=\"verdict [\w-]+\">(regression|improvement|no significant difference)", html
    )
    assert f'href="/runs/{GPT}/cases/0"' in html and f'href="/runs/{CLAUDE}/cases/0"' in html
    same = get(viewer, f"/compare?a={GPT}&b={GPT}")
    assert same.status_code == 200 and "the same run" in same.text
    assert get(viewer, f"/compare?a={GPT}&b=nope").status_code == 404


def test_unknown_runs_cases_and_routes_are_404(viewer: str) -> None:
    for path in ("/runs/nope", f"/runs/{GPT}/cases/99", "/runs/nope/cases/0", "/nothing", "/runs/nope/events"):
        response = get(viewer, path)
        assert response.status_code == 404, path
        assert "Not found" in response.text
    assert "no run 'nope'" in text_of(get(viewer, "/runs/nope").text)


def test_a_unique_prefix_redirects_to_the_full_id(viewer: str) -> None:
    response = get(viewer, "/runs/claude-sonnet")
    assert response.status_code == 307 and response.headers["location"] == f"/runs/{CLAUDE}"
    ambiguous = get(viewer, "/runs/gpt-4-1-mini")
    assert ambiguous.status_code == 404 and "matches 2 runs" in ambiguous.text


@pytest.mark.parametrize("path", ["/", f"/runs/{HOSTILE}", f"/runs/{HOSTILE}/cases/0", f"/compare?a={GPT}&b={HOSTILE}"])
def test_hostile_text_is_escaped_everywhere(viewer: str, path: str) -> None:
    html = get(viewer, path).text
    assert SCRIPT not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    scripts = re.findall(r"<script[^>]*>", html)
    assert len(scripts) == 1 and scripts[0].startswith("<script nonce=")  # only the page's own


def test_target_templates_show_as_placeholders(viewer: str) -> None:
    html = get(viewer, f"/runs/{HOSTILE}").text
    assert "{{ session_id }}" not in html
    assert '<var title="filled in per session">&lt;session_id&gt;</var>' in html


def test_a_foreign_host_header_is_refused_on_loopback(viewer: str) -> None:
    assert get(viewer, "/", headers={"host": "attacker.example"}).status_code == 421
    assert get(viewer, "/", headers={"host": "localhost:1234"}).status_code == 200


def test_the_token_is_checked_on_every_request(store: Store) -> None:
    token = "t0ken-for-the-viewer-test"
    app = create_app(store.history, options=ViewOptions(token=token, loopback=False))
    with serve_app(app) as base:
        for path in ("/", f"/runs/{GPT}", f"/runs/{GPT}/cases/0", "/compare", "/nothing"):
            assert get(base, path).status_code == 401, path
        assert get(base, "/?token=wrong-token-of-the-same-size").status_code == 401
        assert get(base, "/", headers={"authorization": "Bearer nope"}).status_code == 401
        assert get(base, "/", cookies={"proctor_view_token": "nope"}).status_code == 401
        first = get(base, f"/?token={token}")
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert (
            cookie.startswith(f"proctor_view_token={token};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        )
        assert get(base, f"/runs/{GPT}", cookies={"proctor_view_token": token}).status_code == 200
        assert get(base, "/", headers={"authorization": f"Bearer {token}"}).status_code == 200
        assert (
            get(base, "/", headers={"host": "viewer.example:8750", "authorization": f"Bearer {token}"}).status_code
            == 200
        )


def test_a_run_whose_results_file_is_gone_says_so(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    (store.results / f"{CLAUDE}.json").unlink()
    with serve_app(create_app(store.history)) as base:
        response = get(base, f"/runs/{CLAUDE}")
        assert response.status_code == 410 and "proctor runs --prune" in response.text
        assert get(base, f"/runs/{CLAUDE}/cases/0").status_code == 410
        assert get(base, "/").status_code == 200  # still listed, from the index
        compared = get(base, f"/compare?a={GPT}&b={CLAUDE}")  # the index keeps the trials: still comparable
        assert compared.status_code == 200 and "McNemar exact p =" in text_of(compared.text)
