"""Results JSON through orjson: the values `json` would write, the fallbacks where orjson refuses one."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from proctor.results._json import JSONDecodeError, dumps, loads

VALUES: list[Any] = [
    {"a": 1, "b": [1.5, None, True, "é ü 中文 🎉"], "c": {"d": 1e-05, "e": 1e16, "f": -0.0, "g": 0.1 + 0.2}},
    {"tuple": (1, 2), "nested": [[], {}, [{}]], "big": 2**63 - 1, "neg": -(2**63)},
    ["\u2028 line separator", 'quote " and \\ backslash', "\x00 control \x1f", ""],
    {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("indent", [False, True])
def test_what_is_written_reads_back_as_json_dumps_would(value: Any, indent: bool) -> None:
    text = dumps(value, indent=indent)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert loads(text) == json.loads(json.dumps(value))
    if indent:  # the same layout as json.dumps(indent=2) wherever floats are spelled alike
        assert dumps({"a": [1, {"b": None}], "c": {}}, indent=True).decode() == json.dumps(
            {"a": [1, {"b": None}], "c": {}}, indent=2
        )


def test_values_orjson_refuses_fall_back_to_the_standard_library() -> None:
    huge = {"n": 2**70, "s": "lone \ud800 surrogate"}
    text = dumps(huge)
    assert text.isascii() and json.loads(text) == huge
    assert loads(text) == huge  # orjson refuses the escaped surrogate; the standard library reads it


def test_not_json_still_raises_type_error() -> None:
    with pytest.raises(TypeError):
        dumps({"a": {1, 2}})


def test_nan_is_written_as_null_and_old_nan_files_still_read() -> None:
    assert json.loads(dumps({"score": math.nan, "x": math.inf})) == {"score": None, "x": None}
    assert math.isnan(loads(b'{"score": NaN}')["score"])  # an older Proctor wrote NaN


def test_text_that_is_not_json_raises_json_decode_error() -> None:
    with pytest.raises(JSONDecodeError):
        loads(b'{"cut": ')
    with pytest.raises(JSONDecodeError):
        loads("")
