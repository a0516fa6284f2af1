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
    parser.add_argument("--stop-run-s", type=float,
                        help="end each engine run this many seconds after it starts: nothing more is sent, what "
                             "is in flight is aborted and recorded (demo: 10 s after the last arrival)")  # fmt: skip
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="live progress on stderr (default on): a bar on a terminal, else a status line "
                             "every few seconds")  # fmt: skip


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="replay a workload against one or more engines")
    add_run_arguments(run)
    run.set_defaults(run=run_command)
    demo = sub.add_parser("demo", help="the default benchmark, sized to this machine: the Azure conversation trace, "
                          "static vs continuous batching, about two minutes")  # fmt: skip
    add_run_arguments(demo)
    demo.set_defaults(run=demo_command, workload="azure-conv")


def _settings(args: argparse.Namespace, workload_name: str) -> Any:
    from harness.errors import HarnessInputError
    from harness.metrics import SLO
    from harness.run import RunSettings
    from harness.stop_rules import StopRules

    if args.repeat < 1:
        raise HarnessInputError(f"--repeat {args.repeat}: must be >= 1")
    if args.stop_run_s is not None and not args.stop_run_s > 0:
        raise HarnessInputError(f"--stop-run-s {args.stop_run_s}: must be > 0")
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
        max_run_s=args.stop_run_s,
    )
    from harness.progress import default_mode

    progress = default_mode() if args.progress is not False else None
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
    print(f"workload {workload.name}: {len(workload.requests)} requests, fingerprint {workload.fingerprint()[:16]}")
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
    out, _ = execute(args)
    print(f"run directory: {out.resolve()}")
    return 0


def demo_command(args: argparse.Namespace) -> int:
    """The Azure conversation trace against static and continuous batching, sized to this machine (harness.demo)."""
    from harness import demo

    chosen = [flag for flag, dest in SHAPING.items() if getattr(args, dest) is not None]
    for name, value in {"slo_ttft_ms": demo.SLO_TTFT_MS, "slo_tpot_ms": demo.SLO_TPOT_MS}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    plan_lines: list[str] = []
    if chosen or args.workload != demo.TRACE:
        print(f"demo: no calibration ({', '.join(chosen) or '--workload'} given): the load is yours")
    else:
        plan_lines = _calibrated(args)
    out, _ = execute(args)
    for line in plan_lines:
        print(line)
    if not args.no_report:
        _closing(out)
    print(f"run directory: {out.resolve()}")
    return 0


# The workload flags that shape the load; when any is given the demo replays what was asked instead.
SHAPING = {"--start": "start_s", "--duration": "duration_s", "--time-scale": "time_scale", "--rate": "rate",
           "--first": "first", "--requests": "requests"}  # fmt: skip


def _calibrated(args: argparse.Namespace) -> list[str]:
    """Measure this machine, then set the workload flags and threads of `args` to the load it can carry."""
    from engines import compute_threads
    from engines.model.loader import load_model
    from harness import demo
    from workloads import load_workload

    compute_threads.configure(args.threads)
    loaded = load_model(args.model, dtype=args.dtype)  # cached: the run itself loads it again at no cost
    sample = load_workload(demo.TRACE, start_s=demo.TRACE_START_S, first=200, max_context=16384)
    mean_prompt, mean_output, trace_rate = demo.slice_stats(sample)
    print("demo: calibrating this machine (a few seconds) ...", flush=True)
    speed = demo.calibrate(loaded, [r.input_tokens for r in sample.requests], threads=args.threads)
    plan = demo.plan(speed, mean_prompt, mean_output, trace_rate)
    for name, value in plan.overrides().items():
        setattr(args, name, value)
    args.threads = speed.threads
    if args.stop_run_s is None:
        args.stop_run_s = plan.max_run_s
    lines = plan.describe(speed)
    for line in lines:
        print(line)
    return lines


def _closing(out: Path) -> None:
    """What the demo showed, from its report's verdict, and where to look in the report."""
    from reports import analyse

    analysis = analyse([out])
    heads = {h.key: h for h in analysis.verdict.headlines}
    report = (out / "report.html").resolve()
    print("")
    print("what this showed:")
    for key in ("ttft_p99", "goodput_rps"):
        h = heads.get(key)
        if h is None:
            continue
        cells = [f"{label} {h.formatter(e.value)} [{h.formatter(e.low)}, {h.formatter(e.high)}]" if e.has_ci
                 else f"{label} {h.formatter(e.value) if e.value is not None else 'n/a'}"
                 for label, e in h.estimates.items()]  # fmt: skip
        if h.winner and h.clear:
            verdict = f"{h.winner} wins by {h.margin}: the 95% intervals do not overlap"
        elif h.winner:
            verdict = f"{h.winner} ahead, but the 95% intervals overlap: too close to call on this run"
        else:
            verdict = "no winner"
        print(f"  {h.name}: {'; '.join(cells)}. {verdict}.")
    for flag in analysis.verdict.flags:
        if flag["name"] in ("stopped_early", "busy_machine", "steady_rates_undefined"):
            print(f"  ! {flag['series']}: {flag['message']}")
    print("where to look in the report:")
    print(f"  {report}#summary   the verdict: every headline metric with its interval, and the validity flags")
    print(f"  {report}#timeline  the same requests in both engines: under static batching new arrivals wait for")
    print("                        the whole running batch (grey), finished members hold their slots (pink)")
    print(f"  {report}#occupancy slots computing vs held idle, step by step, from the engines' step traces")
    print(f"  {report}#latency   TTFT and E2E distributions from the scheduled arrival (no coordinated omission)")
