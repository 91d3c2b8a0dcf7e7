"""The bundled embedding model (all-MiniLM-L6-v2, int8 ONNX): real vectors, loaded once, cached, offline,
and a clean `EmbeddingsUnavailable` when the extra is missing."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from helpers.trajectories import without_embeddings
from proctor.models import _embeddings
from proctor.models._embeddings import EmbeddingsUnavailable, cosine, embed, embeddings_available, load_embedder


def test_vectors_are_unit_length_and_384_wide() -> None:
    vectors = embed(["time off schedule", "", "a" * 5000])  # empty and over-long texts are fine too
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-5) for v in vectors)


def test_similar_meanings_score_higher_than_different_ones() -> None:
    a, b, c = embed(["time off schedule", "time off schedule information", "reset my password"])
    assert 0.85 < cosine(a, b) < 0.88  # measured 0.866 (fp32 sentence-transformers: 0.87)
    assert cosine(a, c) < 0.4
    assert cosine(a, a) == pytest.approx(1.0)


def test_a_batch_gives_the_same_vectors_as_one_by_one() -> None:
    texts = ["submit my timesheet", "book a meeting room for Friday afternoon with the whole team"]
    together = load_embedder().embed(texts)  # padded to the longest text: the mask keeps the padding out
    fresh = _embeddings.Embedder(_embeddings._import_runtime())  # its own cache
    alone = [fresh.embed([text])[0] for text in texts]
    for x, y in zip(together, alone, strict=True):
        assert cosine(x, y) > 0.9999


def test_loaded_once_and_cached() -> None:
    embedder = load_embedder()
    assert load_embedder() is embedder
    embedder.embed(["cache me please"])
    calls = embedder.model_calls
    assert embedder.embed(["cache me please", "cache me please"])[0] == embedder.embed(["cache me please"])[0]
    assert embedder.model_calls == calls  # served from the cache: the model did not run again


def test_cache_is_bounded() -> None:
    small = _embeddings.Embedder(_embeddings._import_runtime(), cache_size=2)
    small.embed(["one", "two", "three"])
    assert list(small._cache) == ["two", "three"]


def test_missing_extra_is_reported_once_with_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = without_embeddings(monkeypatch)
    with pytest.raises(EmbeddingsUnavailable, match=r"pip install 'proctor-eval\[embeddings\]'"):
        embed(["x"])
    assert not embeddings_available()
    assert len(attempts) == 1  # remembered: no import search on every comparison


def test_a_missing_package_becomes_embeddings_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError
    with pytest.raises(EmbeddingsUnavailable, match="onnxruntime missing"):
        _embeddings._import_runtime()


def test_importing_proctor_does_not_load_the_model_runtime() -> None:
    code = (
        "import sys, proctor.checks, proctor.models, proctor.cli; "
        "heavy = ('onnxruntime', 'tokenizers', 'numpy', 'rapidfuzz'); "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
