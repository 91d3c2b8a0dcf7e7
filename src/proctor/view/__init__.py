"""`proctor view`: a local web app over the run store (runs over time, what failed, transcripts, compare, live runs).

Needs the `serve` extra (Starlette, uvicorn). Nothing here is imported by a run: `proctor.cli` loads it for
`proctor view` and `proctor run --view` only.
"""

from __future__ import annotations

from proctor.view._app import ViewOptions, create_app
from proctor.view._data import RunStore
from proctor.view._serve import serve

__all__ = ["RunStore", "ViewOptions", "create_app", "serve"]
