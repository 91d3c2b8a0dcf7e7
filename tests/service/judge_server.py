"""A scripted OpenAI-compatible judge that answers each pointwise judge by the prompt it receives.

`server.script(relevance=Reply(...), default=Reply(...))` gives a base URL with its own replies: a
judge's queue first (a `Reply` or a list of them, used in order), then `default`. Requests are recorded
per judge, so a test can assert which judges were called and how often.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from servers.model_server import Reply, completion

MARKERS = {
    "Rate how relevant": "relevance",
    "Rate how faithful": "faithfulness",
    "Rate the coherence": "coherence",
    "Rate how completely": "completeness",
    "Rate how well the answer follows": "instruction",
    # the Go Eval Agent's own prompts (configs/judges.yaml)
    "Score how relevant": "relevance",
    "Score how faithful": "faithfulness",
    "Score how logically coherent": "coherence",
    "You are a completeness judge": "completeness",
    "evaluation judge for instruction-following": "instruction",
}


def verdict(score: float, reason: str = "fine") -> Reply:
    return Reply(json.dumps({"reason": reason, "score": score}))


@dataclass
class JudgeScript:
    base_url: str
    queues: dict[str, deque[Reply]]
    default: Reply
    requests: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    @property
    def calls(self) -> int:
        return sum(len(r) for r in self.requests.values())


class JudgeServer:
    def __init__(self) -> None:
        self.base_url = ""
        self.scripts: dict[str, JudgeScript] = {}

    def script(self, default: Reply | None = None, **judges: Reply | list[Reply]) -> JudgeScript:
        token = uuid.uuid4().hex
        queues = {name: deque(r if isinstance(r, list) else [r]) for name, r in judges.items()}
        script = JudgeScript(f"{self.base_url}/j/{token}/v1", queues, default or verdict(0.9))
        self.scripts[token] = script
        return script

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            script = self.scripts[request.path_params["token"]]
            body = await request.json()
            prompt = " ".join(m["content"] for m in body["messages"] if m["role"] == "user")  # a repair round too
            judge = next((name for marker, name in MARKERS.items() if marker in prompt), "other")
            script.requests[judge].append(body)
            queue = script.queues.get(judge)
            reply = queue.popleft() if queue else script.default
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.body is not None:
                if isinstance(reply.body, str):
                    return PlainTextResponse(reply.body, status_code=reply.status)
                return JSONResponse(reply.body, status_code=reply.status)
            if reply.status != 200:
                return JSONResponse({"error": {"message": reply.content}}, status_code=reply.status)
            return JSONResponse(completion(reply))

        return Starlette(routes=[Route("/j/{token}/v1/chat/completions", chat, methods=["POST"])])
