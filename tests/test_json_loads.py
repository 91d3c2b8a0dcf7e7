"""`proctor._json.loads`: orjson's speed, the standard library's values."""

from __future__ import annotations

import json
import math
import random
import struct

import pytest

from proctor import _json

TEXTS = [
    '{"a": [1, 2.5, null, true, false], "b": "\\u00e9", "c": {}}',
    "[0.1, 1E5, -1.5e-10, -0, -0.0, 1E-400, 9223372036854775807, -9223372036854775808]",
    '{"n": 123456789012345678901234567890}',  # beyond 64 bits: orjson would read a float
    "[18446744073709551616, -9223372036854775809]",  # just beyond orjson's integers
    '{"id": "call_12345678901234567890"}',  # a long digit run inside a string
    "[NaN, Infinity, -Infinity]",
    "[1e400]",
    '["\\ud800"]',  # an escaped lone surrogate
    '[{"a": 1, "a": 2}]',
    "  [ 1 ]  ",
]


@pytest.mark.parametrize("text", TEXTS)
def test_values_are_those_of_the_standard_library(text: str) -> None:
    for given in (text, text.encode()):
        value, expected = _json.loads(given), json.loads(text)
        assert repr(value) == repr(expected)  # repr: NaN equal to itself, ints not floats, -0.0 kept


def test_big_integers_stay_integers() -> None:
    assert _json.loads("[123456789012345678901234567890]") == [123456789012345678901234567890]
    assert type(_json.loads(b"-9223372036854775809")) is int


def test_random_doubles_are_read_alike() -> None:
    chance = random.Random(22)
    for _ in range(2000):
        number = struct.unpack("d", struct.pack("Q", chance.getrandbits(64)))[0]
        if math.isfinite(number):
            for text in (repr(number), f"{number:.25e}", f"{number:.3f}"):
                assert _json.loads(text) == json.loads(text)


def test_other_encodings_and_lone_surrogates_are_read() -> None:
    assert _json.loads('{"utf16": 1}'.encode("utf-16")) == {"utf16": 1}
    assert _json.loads('["\ud800"]') == ["\ud800"]  # a str that cannot be UTF-8


@pytest.mark.parametrize("text", ["", "[", "[1,]", "<html>", b"\xff"])
def test_text_that_is_not_json_is_refused(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        _json.loads(text)
