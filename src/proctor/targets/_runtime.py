"""What a case hands the agent besides its messages: watsonx `runtime_context` and `file_upload`.

A watsonx dataset may carry `runtime_context` (context variables IBM's runtime sends with every run,
as the request's `context`) and `file_upload` (a file the user uploads before the first message). The
loader keeps both in `Case.metadata`; `trial_variables(case)` turns them into `SessionContext.variables`
(`runtime_context`, `file_upload`), and each target kind sends them its own way:

- `openai`: `runtime_context` as the request body's `context` on every turn (IBM's key), the file as a
  content part of the first user message (`image_url` with a data URL for images, else a `file` part
  with `file_data`), as OpenAI-compatible chat endpoints take files.
- `http`: the variables `{{ runtime_context }}` and `{{ file_upload }}` (`file_path`, `file_id`,
  `content_type`, and `data_base64`) in the request templates.
- `python`: the callable's `context` parameter (a `SessionContext`) has them in `context.variables`.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

__all__ = ["file_content_part", "trial_variables"]


def trial_variables(case: Any) -> dict[str, Any]:
    """The session variables a case's metadata asks for (`runtime_context`, `file_upload`), else `{}`.

    Args:
        case: A `proctor.suite.Case` (anything with a `metadata` mapping).

    Raises:
        OSError: The file to upload cannot be read (the loader checked it exists).
    """
    metadata = getattr(case, "metadata", None) or {}
    variables: dict[str, Any] = {}
    if metadata.get("runtime_context") is not None:
        variables["runtime_context"] = metadata["runtime_context"]
    upload = metadata.get("file_upload")
    if isinstance(upload, dict):
        data = Path(upload["file_path"]).read_bytes()
        variables["file_upload"] = {**upload, "data_base64": base64.b64encode(data).decode("ascii")}
    return variables


def file_content_part(upload: dict[str, Any]) -> dict[str, Any]:
    """The upload as an OpenAI chat content part: `image_url` for images, else `file`."""
    content_type = str(upload.get("content_type") or "application/octet-stream")
    url = f"data:{content_type};base64,{upload['data_base64']}"
    if content_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"filename": Path(str(upload["file_path"])).name, "file_data": url}}
