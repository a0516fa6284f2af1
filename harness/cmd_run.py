"""`batchmark run` (replay a workload against engines) and `batchmark demo` (the default benchmark)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from harness.cmd_bench import add_model_arguments
from harness.cmd_workload import OVERRIDE_FLAGS, overrides_from

ENGINE_DEFAULT_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--max-batch", "max_batch", int, "static: max batch size (default 32)"),
    ("--batch-timeout-ms", "batch_timeout_ms", float, "static: batch formation timeout (default 50)"),
    ("--max-running", "max_running", int, "continuous: max running sequences (default 32)"),
    ("--max-batched-tokens", "max_batched_tokens", int, "continuous: token budget per step (default 512)"),
    ("--kv-memory-mb", "kv_memory_mb", float, "KV cache budget in MiB (default 256)"),
    ("--kv-blocks", "kv_blocks", int, "exact number of KV blocks (overrides --kv-memory-mb)"),
    ("--block-size", "block_size", int, "tokens per KV block (default 16)"),
    ("--policy", "policy", str, "continuous/static queue order: fcfs, sjf, priority, fair (default fcfs)"),
    ("--step-delay-ms", "step_delay_ms", float, "inject a fixed delay per engine step (gate calibration)"),
    ("--url", "url", str, "http: base URL of an OpenAI-compatible server"),
    ("--served-model", "served_model", str, "http: the model name to request (default: --model or 'batchmark')"),
    ("--api", "api", str, "http: completions or chat (default completions)"),
    ("--timeout-s", "timeout_s", float, "http: per-request timeout"),
    ("--connections", "connections", int, "http: connection pool size"),
    ("--api-key-env", "api_key_env", str, "http: environment variable holding the API key"),
)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload", default="chat-small", help="preset name, .toml spec or trace file")
    parser.add_argument("--engine", action="append", dest="engines", metavar="KIND[:key=value,...]",
                        help="static, continuous, zero or http; repeat to compare on the identical schedule "
                             "(default: static and continuous)")  # fmt: skip
    parser.add_argument("--jitter", action="store_true", help="spread requests that share a timestamp")
    parser.add_argument("--columns", help="column mapping for a generic trace file (see workload describe)")
    for flag, dest, kind, text in OVERRIDE_FLAGS:
        parser.add_argument(flag, dest=dest, type=kind, default=None, help=text)
    for flag, dest, kind, text in ENGINE_DEFAULT_FLAGS:
        parser.add_argument(flag, dest=f"engine_{dest}", type=kind, default=None, help=text)
    parser.add_argument("--no-chunked-prefill", action="store_true", help="continuous: prefill prompts whole")
    add_model_arguments(parser)
    parser.add_argument("--repeat", type=int, default=1, help="trials per engine; metrics get CIs across trials")
    parser.add_argument("--out", type=Path, help="run directory (default runs/<time>-<workload>)")
    parser.add_argument("--slo-ttft-ms", type=float, default=None, help="TTFT SLO (default 2000)")
    parser.add_argument("--slo-tpot-ms", type=float, default=None, help="TPOT SLO (default 200)")
    parser.add_argument("--price-per-hour", type=float, default=2.0, help="$ per accelerator-hour (default 2.00)")
    parser.add_argument("--stop-error-rate", type=float, help="end a run when this share of recent requests fail")
    parser.add_argument("--stop-in-flight", type=int, help="end a run when more requests than this are in flight")
    parser.add_argument("--stop-ttft-p99-ms", type=float, help="end a run when recent p99 TTFT exceeds this")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar (default: when stderr is a terminal)")  # fmt: skip


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="replay a workload against one or more engines")
    add_run_arguments(run)
    run.set_defaults(run=run_command)
    demo = sub.add_parser("demo", help="the default benchmark: an Azure conv slice, static vs continuous")
    add_run_arguments(demo)
    demo.set_defaults(run=demo_command, workload="azure-conv")


def _settings(args: argparse.Namespace, workload_name: str) -> Any:
    from harness.errors import HarnessInputError
    from harness.metrics import SLO
    from harness.run import RunSettings
    from harness.stop_rules import StopRules

    if args.repeat < 1:
        raise HarnessInputError(f"--repeat {args.repeat}: must be >= 1")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    slug = Path(workload_name).stem.replace(" ", "_")
    defaults = SLO()
    slo = SLO(
        ttft_s=args.slo_ttft_ms / 1e3 if args.slo_ttft_ms is not None else defaults.ttft_s,
        tpot_s=args.slo_tpot_ms / 1e3 if args.slo_tpot_ms is not None else defaults.tpot_s,
    )
    stop = StopRules(
        max_error_rate=args.stop_error_rate,
        max_in_flight=args.stop_in_flight,
        max_ttft_p99_s=args.stop_ttft_p99_ms / 1e3 if args.stop_ttft_p99_ms is not None else None,
    )
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    return RunSettings(
        out_dir=args.out or Path("runs") / f"{stamp}-{slug}",
        repeat=args.repeat,
        seed=args.seed or 0,
        slo=slo,
        price_per_hour=args.price_per_hour,
        stop_rules=stop,
        model_path=args.model,
        dtype=args.dtype,
        progress=progress,
        report=not args.no_report,
    )


def _engine_specs(args: argparse.Namespace) -> list[Any]:
    from harness.engine_factory import parse_engine_specs

    defaults = {dest: getattr(args, f"engine_{dest}") for _, dest, _, _ in ENGINE_DEFAULT_FLAGS}
    defaults["model"] = defaults.pop("served_model") or (args.model if not _any_in_process(args) else None)
    if args.no_chunked_prefill:
        defaults["chunked_prefill"] = False
    return parse_engine_specs(args.engines or ["static", "continuous"], defaults)


def _any_in_process(args: argparse.Namespace) -> bool:
    return any(text.split(":")[0] in ("static", "continuous") for text in (args.engines or ["static"]))


def execute(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    from engines import compute_threads
    from harness.console import print_summary
    from harness.run import run_benchmark
    from workloads import load_workload

    compute_threads.configure(args.threads)
    specs = _engine_specs(args)
    overrides = overrides_from(args)
    if overrides.get("max_context") is None and any(s.in_process for s in specs) and args.model is None:
        overrides["max_context"] = 16384  # the embedded model's context: longer trace rows are clipped, and said so
    workload = load_workload(args.workload, **overrides)
    settings = _settings(args, workload.name)
    offered = workload.describe()["mean_rate_rps"]
    load = "closed loop" if workload.closed_loop_users else (f"offered {offered:.3f} req/s" if offered else "one burst")
    print(f"workload {workload.name}: {len(workload.requests)} requests, {load}, "
          f"fingerprint {workload.fingerprint()[:16]}")  # fmt: skip
    for note in workload.notes:
        print(f"  note: {note}")
    metrics = run_benchmark(workload, specs, settings, sys.argv)
    print_summary(metrics)
    out = settings.out_dir
    if settings.report:
        _write_report(out)
    return out, metrics


def _write_report(out: Path) -> None:
    from reports import analyse, markdown_summary, write_report

    analysis = analyse([out])
    (out / "summary.md").write_text(markdown_summary(analysis))
    path = write_report(analysis, out / "report.html")
    print(f"report: {path.resolve()}")


def run_command(args: argparse.Namespace) -> int:
    out, metrics = execute(args)
    return _finish(out, metrics)


def _finish(out: Path, metrics: dict[str, Any]) -> int:
    """The run directory's path; exit 1 with one line when the run failed as a whole (records are kept)."""
    from harness.console import run_failure

    print(f"run directory: {out.resolve()}")
    problem = run_failure(metrics)
    if problem is None:
        return 0
    print(f"batchmark: error: {problem} (records kept in {out})", file=sys.stderr)
    return 1


def demo_command(args: argparse.Namespace) -> int:
    """Azure conv, a slice replayed faster than real time so the embedded model is loaded hard."""
    for name, value in DEMO_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    out, metrics = execute(args)
    return _finish(out, metrics)


# 9 s of Azure conv from minute 10 (about 40 requests, ~1,000-token prompts) replayed at 0.15x speed, so
# they arrive over a minute at ~0.7 req/s: more than static batching sustains with the embedded model on
# 2 cores, less than continuous batching does, so the scheduler decides the outcome.
DEMO_DEFAULTS: dict[str, Any] = {
    "start_s": 600.0,
    "duration_s": 9.0,
    "time_scale": 0.15,
    "slo_ttft_ms": 2000.0,
    "slo_tpot_ms": 200.0,
}
