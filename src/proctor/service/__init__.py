"""The online evaluation service: score agent responses as they happen, over HTTP or a Redis Stream.

It runs the same checks and scoring as batch runs on one recorded interaction (query, context,
answer): prechecks, an early exit, LLM judges, a confidence and a verdict (`Pipeline`). Around it:

* `create_app`: the HTTP API (`proctor serve`), Starlette on uvicorn (extra `serve`);
* `Consumer`: a Redis Stream consumer group member (`proctor consume`), at least once, nothing lost;
* `score_events`: a JSON Lines file of events, offline (what `proctor score` runs for such files);
* `calibrate`: the verdicts against human labels (`proctor calibrate`).

```python
from proctor.service import EvaluationRequest, ServiceSettings, build_pipeline

pipeline = build_pipeline(ServiceSettings(judge_model="openai/gpt-4.1-mini"))
result = await pipeline.evaluate(EvaluationRequest.model_validate(event))
print(result.verdict, result.confidence, result.errors)
```

Starlette and the Redis client load only when the app or the consumer is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.service._batch import ScoreSummary, looks_like_events, score_events
    from proctor.service._calibration import CalibrationReport, calibrate, kendall_tau_b
    from proctor.service._consumer import Consumer, ConsumerConfig, ConsumerStats
    from proctor.service._http import HttpOptions, create_app
    from proctor.service._models import (
        EvaluationRequest,
        EvaluationResult,
        HealthResponse,
        Stage,
        StageError,
        Verdict,
    )
    from proctor.service._pipeline import (
        DEFAULT_JUDGES,
        JUDGES,
        Pipeline,
        PipelineConfig,
        ServiceSettings,
        build_pipeline,
    )

_LAZY = {
    "CalibrationReport": "proctor.service._calibration",
    "Consumer": "proctor.service._consumer",
    "ConsumerConfig": "proctor.service._consumer",
    "ConsumerStats": "proctor.service._consumer",
    "DEFAULT_JUDGES": "proctor.service._pipeline",
    "EvaluationRequest": "proctor.service._models",
    "EvaluationResult": "proctor.service._models",
    "HealthResponse": "proctor.service._models",
    "HttpOptions": "proctor.service._http",
    "JUDGES": "proctor.service._pipeline",
    "Pipeline": "proctor.service._pipeline",
    "PipelineConfig": "proctor.service._pipeline",
    "ScoreSummary": "proctor.service._batch",
    "ServiceSettings": "proctor.service._pipeline",
    "Stage": "proctor.service._models",
    "StageError": "proctor.service._models",
    "Verdict": "proctor.service._models",
    "build_pipeline": "proctor.service._pipeline",
    "calibrate": "proctor.service._calibration",
    "create_app": "proctor.service._http",
    "kendall_tau_b": "proctor.service._calibration",
    "looks_like_events": "proctor.service._batch",
    "score_events": "proctor.service._batch",
}


__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "DEFAULT_JUDGES",
    "JUDGES",
    "CalibrationReport",
    "Consumer",
    "ConsumerConfig",
    "ConsumerStats",
    "EvaluationRequest",
    "EvaluationResult",
    "HealthResponse",
    "HttpOptions",
    "Pipeline",
    "PipelineConfig",
    "ScoreSummary",
    "ServiceSettings",
    "Stage",
    "StageError",
    "Verdict",
    "build_pipeline",
    "calibrate",
    "create_app",
    "kendall_tau_b",
    "looks_like_events",
    "score_events",
]
