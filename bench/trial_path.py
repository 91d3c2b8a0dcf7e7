"""CPU per trial of the run pipeline's trial path, without the recorder (issue 22's "trials' share").

Runs every planned trial of a suite through the executor and `_run_one` (session, turns, checks, score,
`TrialResult`) at concurrency 16, as `proctor run` does, but records nothing: the journal and the
results file are measured elsewhere. The suite is W2's shape: one turn echoed by an in-process async
agent, one `contains` check, `trials: 1`, generated into a temporary directory. Prints the CPU time
(`time.process_time()`) per trial of each repetition, then the median and minimum.

```sh
.venv/bin/python bench/trial_path.py [--cases 5000] [--reps 7] [--profile]
```
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from proctor.checks import registry
from proctor.results import TrialResult
from proctor.run import RunOptions, batch
from proctor.run.execute import execute
from proctor.run.plan import TrialWork, plan_run
from proctor.suite import load_suites
from proctor.suite._trust import Trust

AGENT = """async def respond(messages):
    return messages[-1]["content"]
"""


def write_suite(directory: Path, cases: int) -> Path:
    """W2's shape: `cases` one-turn cases, each echoed and checked with one `contains`."""
    lines = ["name: trial-path", "trials: 1", "target: python:trial_path_agent:respond", "cases:"]
    for i in range(cases):
        lines += [
            f"  - name: case-{i}",
            "    turns:",
            f'      - content: "Echo case-{i} please"',
            "        assert:",
            f'          - {{type: contains, value: "case-{i}"}}',
        ]
    (directory / "suite.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (directory / "trial_path_agent.py").write_text(AGENT, encoding="utf-8")
    return directory


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one repetition")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = write_suite(Path(tmp), args.cases)
        sys.path.insert(0, str(directory))
        suites = load_suites([directory], registry, trust=Trust(True, False, None))
        gc.freeze()  # as `proctor run` does after loading
        gc.set_threshold(100_000, 10, 10)
        options = RunOptions(concurrency=16, write_results=False)
        plan = plan_run(suites, options)
        resources = batch._Resources(plan, options)
        resources.start_models(plan, options)
        results: list[TrialResult] = []

        async def one(work: TrialWork) -> None:
            results.append(await batch._run_one(work, plan, options, resources))

        async def repetition(profile: cProfile.Profile | None = None) -> float:
            results.clear()
            started = time.process_time()
            if profile is not None:
                profile.enable()
            await execute(plan.todo, one, concurrency=16, handle_sigint=True)
            if profile is not None:
                profile.disable()
            elapsed = time.process_time() - started
            if len(results) != len(plan.todo) or any(trial.status != "passed" for trial in results):
                raise SystemExit(f"not every trial passed: {sorted({t.status for t in results})}")
            return elapsed / len(plan.todo) * 1e6

        anyio.run(repetition)  # warm-up
        samples = [anyio.run(repetition) for _ in range(args.reps)]
        print("CPU per trial (µs):", " ".join(f"{s:.1f}" for s in samples))
        print(f"median {statistics.median(samples):.1f} µs, min {min(samples):.1f} µs, {len(plan.todo)} trials")
        if args.profile:
            profile = cProfile.Profile()
            anyio.run(repetition, profile)
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
