"""`slot_init`: a frozen, slotted dataclass built through its slots is the one its own `__init__` builds."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proctor._slots import slot_init
from proctor.suite import Case
from proctor.suite._model import ScoringSpec, TurnSpec


def _twin(cls: type) -> Any:
    """`cls` as `dataclass(frozen=True, slots=True)` makes it, without `slot_init`: the reference."""
    specs = [
        (
            f.name,
            f.type,
            field(default=f.default)
            if f.default_factory is dataclasses.MISSING
            else field(default_factory=f.default_factory),
        )
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


def _values(instance: Any) -> list[Any]:
    return [getattr(instance, f.name) for f in dataclasses.fields(instance)]


def test_a_case_has_the_dataclass_signature_and_values() -> None:
    reference = _twin(Case)
    assert str(inspect.signature(Case)) == str(inspect.signature(reference))
    turn = TurnSpec(content="hi")
    given = {"name": "c", "file": Path("s.yaml"), "suite": "s", "turns": (turn,), "trials": 2, "tags": ("t",)}
    case = Case(**given)
    assert _values(case) == _values(reference(**given))
    assert case.scoring == ScoringSpec() and case.metadata == {} and case.tools == {} and case.vars == {}
    other = Case("d", Path("s.yaml"), "s", ())
    assert case.scoring is not other.scoring and case.metadata is not other.metadata  # a factory's each


def test_a_case_stays_frozen_and_replace_works() -> None:
    case = Case("c", Path("s.yaml"), "s", ())
    assert type(case) is Case and isinstance(case, Case)
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.name = "d"  # type: ignore[misc]
    positional = Case(*_values(case))
    assert positional == case and repr(positional) == repr(case) and hash(case.name) == hash(positional.name)
    changed = dataclasses.replace(case, trials=5)
    assert changed.trials == 5 and _values(changed)[:4] == _values(case)[:4]


def test_a_case_copies_and_pickles_as_before() -> None:
    case = Case("c", Path("s.yaml"), "s", (TurnSpec(content="hi"),), tags=("a",), metadata={"k": [1]})
    for twin in (copy.copy(case), copy.deepcopy(case), pickle.loads(pickle.dumps(case))):
        assert type(twin) is Case and twin == case
    assert copy.deepcopy(case).metadata is not case.metadata


@dataclass(frozen=True, slots=True)
class _Sample:
    name: str
    items: list[int] = field(default_factory=list)
    label: str = "x"


_Reference = _twin(_Sample)
slot_init(_Sample)


def test_slot_init_keeps_defaults_factories_and_argument_errors() -> None:
    assert str(inspect.signature(_Sample)) == str(inspect.signature(_Reference))
    for args, kwargs in [(("a",), {}), (("a", [1]), {"label": "y"}), ((), {"name": "b", "items": [2]})]:
        assert _values(_Sample(*args, **kwargs)) == _values(_Reference(*args, **kwargs))
    assert _Sample("a").items is not _Sample("a").items
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        _Sample()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        _Sample("a", nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        _Sample("a", name="b")  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        _Sample("a").name = "b"  # type: ignore[misc]


def test_a_field_may_be_named_self() -> None:
    @dataclass(frozen=True, slots=True)
    class Odd:
        self: int
        other: str = "o"

    slot_init(Odd)
    odd = Odd(1)
    assert (odd.self, odd.other) == (1, "o") and Odd(self=2).self == 2


def test_slot_init_refuses_what_it_does_not_do() -> None:
    @dataclass(slots=True)
    class NotFrozen:
        x: int

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        x: int

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        x: int
        y: InitVar[int] = 0

        def __post_init__(self, y: int) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class Base:
        x: int

    @dataclass(frozen=True, slots=True)
    class Derived(Base):
        y: int

    for cls in (NotFrozen, NoSlots, KeywordOnly, WithInitVar, Derived):
        with pytest.raises(TypeError):
            slot_init(cls)
