"""A dead engine thread ends the run with one line and a non-zero exit, keeping the records written so far."""

from __future__ import annotations

import json
import threading

from engines.model_runner import ModelRunner
from engines.scheduler import ContinuousScheduler
from harness.cli import main
from harness.metrics import load_records


def test_an_engine_that_dies_mid_run_ends_it(tmp_path, monkeypatch, capsys):
    # before: the thread's traceback, then `run` hung for ever waiting on requests nothing would answer
    execute, postprocess = ModelRunner.execute, ContinuousScheduler.remove_finished
    finished: list[str] = []

    def dying(self, plan):
        if finished:  # the step after the first request finished: some records exist, more requests are due
            raise RuntimeError("injected: the model runner broke")
        return execute(self, plan)

    def noting(self, plan, sampled):
        done = postprocess(self, plan, sampled)
        finished.extend(seq.request_id for seq in done)
        return done

    monkeypatch.setattr(ModelRunner, "execute", dying)
    monkeypatch.setattr(ContinuousScheduler, "remove_finished", noting)
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "40",
        "--time-scale",
        "2",
        "--engine",
        "continuous:engine_process=false",  # the failure is injected into this process's model runner
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(argv)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the run hung after its engine died"
    assert result == [1]
    err = capsys.readouterr().err
    assert "engine continuous (trial 0) failed: engine loop failed: RuntimeError: injected" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    records = load_records(tmp_path / "records.jsonl")
    assert (records["finish_reason"] == "length").any()  # what finished before the failure is kept
    assert (records["error_type"] == "engine_failure").any()
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    stopped = metrics["runs"][0]["stopped_early"]
    assert stopped["rule"] == "engine_failure" and stopped["sent"] + stopped["not_sent"] == 40


def test_a_request_after_the_failure_is_answered_at_once(embedded, monkeypatch):
    import asyncio

    from engines.api import FinishEvent, Request
    from engines.inprocess import EngineOptions, InProcessEngine

    engine = InProcessEngine(embedded, EngineOptions(kind="continuous"))

    def broken(plan):
        raise RuntimeError("gone")

    monkeypatch.setattr(engine.runner, "execute", broken)

    async def go():
        await engine.start()
        try:
            first = [e async for e in engine.generate(Request("first", [5, 6, 7], 4))]
            late = [e async for e in engine.generate(Request("late", [5, 6, 7], 4))]  # the loop is dead by now
            return first, late
        finally:
            await engine.stop()

    first, late = asyncio.run(asyncio.wait_for(go(), 30))
    for events in (first, late):
        assert isinstance(events[-1], FinishEvent) and events[-1].error_type == "engine_failure"
        assert events[-1].error_message == "engine loop failed: RuntimeError: gone"
