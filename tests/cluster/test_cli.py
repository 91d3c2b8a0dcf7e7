"""`proctor run --cluster`: the option reaches the runner; a bad address is a usage error before Ray starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()


def test_a_malformed_cluster_address_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("name: s\ntarget: http://127.0.0.1:9/v1\nturns: [{content: hi}]\n")
    result = runner.invoke(app, ["run", str(tmp_path), "--cluster", "not an address"])
    assert result.exit_code == 2
    assert "--cluster: expected 'auto', 'ray://HOST:PORT' or 'HOST:PORT', found 'not an address'" in result.output


@pytest.mark.usefixtures("ray_local")
def test_max_errors_stops_a_cluster_run(model_server: Any, tmp_path: Path) -> None:
    agent = model_server.script(default=Reply("no", status=400))
    text = f"name: s\ntarget: {{type: openai, base_url: '{agent.base_url}'}}\ntrials: 6\nturns: [{{content: hi}}]\n"
    (tmp_path / "s.yaml").write_text(text)
    args = ["run", str(tmp_path), "--cluster", "auto", "--cluster-workers", "2", "--concurrency", "1"]
    result = runner.invoke(app, [*args, "--max-errors", "1", "--ci"])
    assert result.exit_code == 5, result.output
    summary = json.loads(result.stdout)
    assert summary["status"] == "aborted" and summary["summary"]["trials"]["run"] == 2  # the second error stops it


@pytest.mark.usefixtures("ray_local")
def test_more_workers_than_the_cluster_can_place_is_a_clear_error(model_server: Any, tmp_path: Path) -> None:
    import ray

    from proctor.cluster import ClusterSettings, remote_trials
    from proctor.errors import ConfigError
    from proctor.run import RunOptions, run_sync
    from proctor.suite import load_suites

    agent = model_server.script(default=Reply("hi"))
    text = f"name: s\ntarget: {{type: openai, base_url: '{agent.base_url}'}}\nturns: [{{content: hi}}]\n"
    (tmp_path / "s.yaml").write_text(text)
    cpus = int(ray.cluster_resources()["CPU"])
    settings = ClusterSettings("auto", workers=cpus + 1, cpus_per_worker=1)
    expected = rf"--cluster: {cpus + 1} workers do not fit \(the cluster has {cpus} CPUs; each worker asks for 1\)"
    with pytest.raises(ConfigError, match=expected):
        run_sync(load_suites([tmp_path / "s.yaml"]), RunOptions(write_results=False), remote=remote_trials(settings))
    assert agent.requests == []
    assert not [n for n in ray.util.list_named_actors() if "-worker-" in n]
