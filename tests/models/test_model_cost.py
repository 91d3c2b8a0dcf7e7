from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from proctor.errors import BudgetExceeded, ConfigError
from proctor.models import (
    Budget,
    ModelSettings,
    Price,
    UsageLedger,
    default_prices,
    get_model,
    load_prices,
    prompt_hash,
)
from proctor.transcript import Usage
from servers.model_server import ModelServer, Reply

HELLO = [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    ("name", "price"),
    [
        ("openai/gpt-4.1-mini", Price(0.4, 1.6)),
        ("openai/gpt-4o-2024-08-06", Price(2.5, 10.0)),
        ("openai/gpt-4o-mini", Price(0.15, 0.6)),
        ("anthropic/claude-sonnet-4-5-20250929", Price(3.0, 15.0)),
        ("anthropic/claude-3-5-haiku-latest", Price(0.8, 4.0)),
        ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", Price(3.0, 15.0)),
        ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", Price(0.25, 1.25)),
        ("gemini/gemini-2.5-flash", Price(0.3, 2.5)),
        ("gemini/models/gemini-2.5-pro", Price(1.25, 10.0)),
        ("litellm/anthropic/claude-haiku-4-5", Price(1.0, 5.0)),
        ("ollama/llama3.2", Price(0.0, 0.0)),
    ],
)
def test_bundled_price_lookup(name: str, price: Price) -> None:
    assert load_prices().lookup(name) == price


def test_unknown_model_costs_none_not_zero() -> None:
    table = load_prices()
    assert table.lookup("openai/my-finetune") is None
    assert table.cost("openai/my-finetune", Usage(1000, 1000)) is None
    assert table.cost("openai/gpt-4.1-mini", Usage(1_000_000, 500_000)) == pytest.approx(0.4 + 0.8)


def test_override_file_json_yaml_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    json_file = tmp_path / "prices.json"
    json_file.write_text(
        '{"models": {"openai/*": {"input": 0, "output": 0}, "gpt-4.1-mini": {"input": 1, "output": 2}}}'
    )
    table = load_prices(json_file)
    assert table.lookup("openai/gpt-4.1-mini") == Price(1.0, 2.0)
    assert table.lookup("openai/local-llama") == Price(0.0, 0.0)
    yaml_file = tmp_path / "prices.yaml"
    yaml_file.write_text("my-model:\n  input: 0.5\n  output: 1.5\n")
    monkeypatch.setenv("PROCTOR_PRICES", str(yaml_file))
    assert default_prices().lookup("openai/my-model") == Price(0.5, 1.5)
    monkeypatch.delenv("PROCTOR_PRICES")
    assert default_prices().lookup("openai/my-model") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected a mapping"),
        ('{"m": {"input": 1}}', "needs numeric 'input' and 'output'"),
        ('{"m": {"input": -1, "output": 1}}', "cannot be negative"),
        ("{nope", "does not parse"),
    ],
)
def test_bad_price_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_prices(path)
    with pytest.raises(ConfigError, match="cannot read price file"):
        load_prices(tmp_path / "missing.json")


@pytest.mark.anyio
async def test_ledger_totals_by_role_with_prices(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply(usage={"prompt_tokens": 1000, "completion_tokens": 500}))
    ledger = UsageLedger()
    judge_settings = make_settings(script, ledger=ledger)
    async with get_model("openai/gpt-4.1-mini", settings=judge_settings) as judge:
        response = await judge.generate(HELLO)
        await judge.generate(HELLO)
    assert response.cost_usd == pytest.approx((1000 * 0.4 + 500 * 1.6) / 1e6)
    before = ledger.snapshot()
    async with get_model("openai/local-sim", settings=judge_settings) as simulator:
        unknown = await simulator.generate(HELLO, role="simulator")
    assert unknown.cost_usd is None
    ledger.record("agent", "openai/gpt-4o", Usage(2000, 100), 0.006)

    roles = ledger.by_role()
    assert roles["judge"].calls == 2
    assert roles["judge"].prompt_tokens == 2000 and roles["judge"].completion_tokens == 1000
    assert roles["judge"].cost_usd == pytest.approx(2 * 0.0012)
    assert roles["simulator"].cost_usd is None and roles["simulator"].unpriced_calls == 1
    assert roles["agent"].cost_usd == pytest.approx(0.006)
    total = ledger.total()
    assert total.calls == 4 and total.unpriced_calls == 1
    assert total.cost_usd is None  # one call's cost is unknown: no made-up total
    assert total.priced_usd == pytest.approx(0.0084)
    assert ledger.snapshot().by_model()["openai/gpt-4.1-mini"].cost_usd == pytest.approx(0.0024)

    since = ledger.snapshot() - before  # what one trial used
    assert set(since.by_role()) == {"simulator", "agent"}
    assert since.by_model()["openai/local-sim"].prompt_tokens == 1000
    data = since.to_dict()
    assert data["by_role"]["simulator"]["cost_usd"] is None
    assert data["total"]["calls"] == 2


@pytest.mark.anyio
async def test_budget_stops_new_calls_once_spent(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply(usage={"prompt_tokens": 1_000_000, "completion_tokens": 0}))
    budget = Budget(0.5)
    async with get_model("openai/gpt-4.1-mini", settings=make_settings(script, budget=budget)) as model:
        await model.generate(HELLO)  # $0.40: under the limit
        await model.generate(HELLO)  # starts at $0.40, ends at $0.80
        with pytest.raises(BudgetExceeded, match=r"budget of \$0.5 reached \(spent \$0.8000\)") as info:
            await model.generate(HELLO)
    assert len(script.requests) == 2
    assert info.value.exit_code == 3
    assert (info.value.limit_usd, info.value.spent_usd) == (0.5, pytest.approx(0.8))
    assert budget.exhausted and budget.remaining_usd == 0.0


def test_budget_counts_unpriced_calls_and_rejects_nonsense() -> None:
    budget = Budget(1)
    budget.charge(None)
    budget.charge(0.25)
    assert (budget.unpriced_calls, budget.spent_usd, budget.remaining_usd) == (1, 0.25, 0.75)
    budget.check()
    with pytest.raises(ConfigError):
        Budget(0)


def test_prompt_hash() -> None:
    assert prompt_hash("Grade {{answer}}") == prompt_hash("Grade {{answer}}")
    assert len(prompt_hash("x")) == 12
    assert prompt_hash("x") == "2d711642b726"
