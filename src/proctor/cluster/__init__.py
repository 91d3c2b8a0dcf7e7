"""Run a batch's trials on a Ray cluster (`proctor run --cluster`); needs the `ray` extra.

```python
from proctor.cluster import ClusterSettings, remote_trials

outcome = proctor.run_sync(suites, options, remote=remote_trials(ClusterSettings("auto")))
```

The driver (this process) plans, limits, journals and writes exactly as a local run does
(`proctor.run.batch`); the trials run in worker actors, each with its own event loop, targets, graphs and
models. Ray is imported by `remote_trials`, not by importing this package.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

from proctor.cluster._address import check_address
from proctor.cluster._settings import ClusterSettings
from proctor.errors import ConfigError

if TYPE_CHECKING:
    from proctor.run.batch import RemoteTrials

__all__ = ["ClusterSettings", "check_address", "remote_trials", "require_ray"]


def require_ray() -> None:
    """Raise a `ConfigError` naming the extra to install when Ray is missing."""
    if importlib.util.find_spec("ray") is None:
        raise ConfigError("--cluster needs Ray: pip install 'proctor-eval[ray]'")


def remote_trials(settings: ClusterSettings) -> RemoteTrials:
    """What `proctor.run.run(remote=...)` takes to run a run's trials on the cluster `settings` names.

    Raises:
        ConfigError: The address is malformed, or Ray is not installed.
    """
    check_address(settings.address)
    require_ray()
    if settings.address == "auto":
        # read by Ray when it is imported: a local instance binds every process to 127.0.0.1
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from proctor.cluster import _pool  # optional extra (ray), imported once its environment is set

    return _pool.remote_trials(settings)
