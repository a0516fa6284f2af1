"""What several commands share: flags built from the option tables, and the settings those flags make.

- engine flags (`--max-running`, `--policy`, ...): from the engine option table, `engines/options.py`;
- workload flags (`--rate`, `--duration`, ...): from the workload override table, `workloads/options.py`;
- executor flags (`--executor`, `--ray-address`, `--workers`): from the executor option table,
  `harness/executor/options.py`;
- model, run, scenario and SLO flags: the rest of what `run`, `demo`, `sweep`, `calibrate` and `serve` take.

Every flag defaults to None ("not given"): the tables hold the defaults, so a help text and the value a
run uses cannot disagree. Values are checked here, before any model loads or any request is sent.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.options import ENGINE_OPTIONS, IN_PROCESS, KINDS, Option
from harness.errors import HarnessInputError
from workloads.options import OVERRIDES, parse_columns

if TYPE_CHECKING:  # commands load these late (torch, pandas), so `batchmark --help` starts fast
    from engines.model.loader import LoadedModel
    from harness.executor.options import ExecutorChoice
    from harness.loadgen.scenarios import Scenario
    from harness.metrics.slo import SLO
    from harness.run import RunSettings

SCENARIOS = ("open", "closed", "offline", "sessions")


# -- flags that are neither engine options nor workload overrides -----------------------------------
# Each `Flag` states its type, range and help once; `add_flags` builds the argparse flags from a table and
# `check_flags` checks the values a command was given, before any model loads or any request is sent.
# Values arrive as text, so argparse never prints its own usage-and-error pair: a bad value is one line
# naming the flag (`--slo-ttft-ms nan: must be a finite number > 0`) and exit 2. NaN and infinity are
# never numbers here; an output directory must be one that can be written.
@dataclass(frozen=True)
class Flag:
    """One flag: its type, default, range and help."""

    flag: str
    type: type  # int, float, str, or Path (a directory to write, created when missing)
    help: str
    default: Any = None
    low: float | None = None  # the lowest allowed value ...
    above: bool = False  # ... or strictly above it
    high: float | None = None  # the highest allowed value (inclusive)
    metavar: str | None = None
    dest: str | None = None

    @property
    def name(self) -> str:
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    def range_text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.above else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return " and ".join(parts)

    def add(self, parser: argparse.ArgumentParser) -> None:
        shown = f" (default {self.default:g})" if isinstance(self.default, int | float) and self.default else ""
        parser.add_argument(
            self.flag,
            dest=self.name,
            default=self.default,
            metavar=self.metavar,
            help=(self.help + shown).replace("%", "%%"),
        )

    def check(self, value: Any) -> Any:
        """`value` converted to the flag's type and checked; HarnessInputError naming the flag otherwise."""
        if value is None or (value == self.default and not isinstance(value, str)):
            return value
        if self.type is Path:
            return writable_dir(Path(value), self.flag)
        if self.type is str:
            return str(value)
        kind = "an integer" if self.type is int else "a number"
        try:
            number = self.type(value)
        except (TypeError, ValueError, OverflowError):
            raise HarnessInputError(f"{self.flag} {value}: must be {kind}") from None
        if not math.isfinite(number):
            raise HarnessInputError(f"{self.flag} {value}: must be a finite number {self.range_text()}".rstrip())
        low, high = self.low, self.high
        too_low = low is not None and (number < low or (self.above and number == low))
        if too_low or (high is not None and number > high):
            raise HarnessInputError(f"{self.flag} {value}: must be {self.range_text()}")
        return number


def add_flags(parser: argparse.ArgumentParser, flags: Sequence[Flag]) -> None:
    for flag in flags:
        flag.add(parser)


def check_flags(args: argparse.Namespace, flags: Sequence[Flag]) -> None:
    """Every flag of `flags` checked, and replaced by its typed value, in place."""
    for flag in flags:
        setattr(args, flag.name, flag.check(getattr(args, flag.name, None)))


def writable_dir(path: Path, flag: str) -> Path:
    """`path` if it is, or can become, a directory that takes new files; one line if not. Creates nothing: the
    nearest existing ancestor is what is tried (a temporary file made and removed at once)."""
    if path.exists() and not path.is_dir():
        raise HarnessInputError(f"{flag} {path}: is a file, not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise HarnessInputError(f"{flag} {path}: {existing} is a file, not a directory")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".batchmark-write-test-"):
            pass
    except OSError as exc:
        raise HarnessInputError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None
    return path


# -- engine options --------------------------------------------------------------------------------
def engine_options_for(kinds: tuple[str, ...]) -> list[Option]:
    return [o for o in ENGINE_OPTIONS if o.flag and any(o.applies_to(k) for k in kinds)]


def add_engine_flags(parser: argparse.ArgumentParser, kinds: tuple[str, ...] = KINDS, profile: str = "online") -> None:
    """One flag per engine option that applies to one of `kinds`, with the default `profile` gives it."""
    for o in engine_options_for(kinds):
        text = o.help_text(profile).replace("%", "%%")
        dest = f"engine_{o.name}"
        if o.type is bool:
            value = not o.default
            parser.add_argument(o.flag_name, *o.aliases, dest=dest, action="store_const", const=value, help=text)
        else:
            metavar = o.metavar or o.name.rsplit("_", 1)[-1].upper()
            parser.add_argument(o.flag_name, *o.aliases, dest=dest, metavar=metavar, help=text)


def engine_flag_values(args: argparse.Namespace, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """The engine flags given, checked against the table (None: not given)."""
    return {o.name: o.check_flag(getattr(args, f"engine_{o.name}", None)) for o in engine_options_for(kinds)}


def engine_specs(args: argparse.Namespace, default: tuple[str, ...] = ("static", "continuous")) -> list[Any]:
    """`--engine` specs over the engine flags. An HTTP engine asks for `--served-model`, else `--model` when
    no in-process engine needs that flag for a checkpoint, else 'batchmark'."""
    from harness.engine_specs import parse_engine_specs

    texts = args.engines or list(default)
    defaults = engine_flag_values(args)
    in_process = any(text.split(":")[0] in IN_PROCESS for text in texts)
    defaults["model"] = defaults["model"] or (args.model if not in_process else None)
    if defaults.get("admission_slo_ms") is None and hasattr(args, "slo_ttft_ms"):
        from harness.engine_specs import admission_target_ms

        defaults["admission_slo_ms"] = admission_target_ms(slo_from_args(args))
    return parse_engine_specs(texts, defaults)


# -- workload overrides ----------------------------------------------------------------------------
def add_workload_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per row of the workload override table."""
    for o in OVERRIDES:
        extra = f" ({o.range_text()})" if o.range_text() and "(" not in o.help else ""
        if o.type is bool:
            parser.add_argument(o.flag, dest=o.name, action="store_const", const=True, help=o.help)
        else:
            kind = str if o.type is dict else o.type
            parser.add_argument(o.flag, dest=o.name, type=kind, metavar=o.metavar, help=o.help + extra)


def workload_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The workload flags given, as `load_workload` keyword arguments (None: not given)."""
    values = {o.name: getattr(args, o.name) for o in OVERRIDES}
    values["columns"] = parse_columns(values["columns"])
    return values


def load_run_workload(args: argparse.Namespace, specs: list[Any], **fixed: Any) -> tuple[Any, dict[str, Any]]:
    """`harness.engine_specs.load_for_engines` of `--workload` with the workload flags (and `fixed` on top)."""
    from harness.engine_specs import load_for_engines

    return load_for_engines(args.workload, specs, args.model, **{**workload_overrides(args), **fixed})


# -- the executor ----------------------------------------------------------------------------------
def add_executor_flags(parser: argparse.ArgumentParser, workers: bool = True) -> None:
    """One flag per row of the executor option table (`--workers` only where load is generated)."""
    from harness.executor.options import EXECUTOR_OPTIONS

    for o in EXECUTOR_OPTIONS:
        if o.name == "workers" and not workers:
            continue
        shown = f" (default {o.default})" if o.default is not None else ""
        parser.add_argument(
            o.flag,
            dest=f"executor_{o.name}",
            type=o.type,
            choices=o.choices or None,
            metavar=o.metavar,
            help=(o.help + shown).replace("%", "%%"),
        )
    if workers:
        parser.add_argument(
            "--force",
            dest="executor_force",
            action="store_true",
            help="start --workers past the bounds a slip usually crosses: more than the requests, more than 8 per "
            "CPU, or more memory than is available",
        )


def executor_choice(args: argparse.Namespace) -> ExecutorChoice:
    """The executor flags given, over the table's defaults, checked (Ray installed, its head reachable)."""
    from harness.executor import EXECUTOR_OPTIONS, ExecutorChoice, check_choice

    given = {o.name: getattr(args, f"executor_{o.name}", None) for o in EXECUTOR_OPTIONS}
    values = {o.name: o.default if given[o.name] is None else given[o.name] for o in EXECUTOR_OPTIONS}
    choice = ExecutorChoice(
        kind=values["executor"],
        address=values["ray_address"],
        workers=values["workers"],
        force=bool(getattr(args, "executor_force", False)),
    )
    check_choice(choice)
    return choice


@contextlib.contextmanager
def executor_from_args(
    args: argparse.Namespace, specs: list[Any] | None = None, requests: int | None = None
) -> Iterator[Any]:
    """The executor the flags choose, connected (a Ray cluster now, before any work starts), closed after.
    With `requests` (the schedule's size) the load-generator workers are bounded and their memory said first."""
    from harness.errors import HarnessInputError
    from harness.executor import make_executor
    from harness.executor.options import check_workers
    from harness.shards import SHARDABLE

    choice = executor_choice(args)
    if choice.workers > 1 and specs is not None and not any(s.kind in SHARDABLE for s in specs):
        raise HarnessInputError(
            f"--workers {choice.workers}: sharded load generation drives {' and '.join(SHARDABLE)} engines; "
            f"{', '.join(s.label for s in specs)} run inside their load generator"
        )
    if requests is not None and (line := check_workers(choice, requests)) is not None:
        print(line, flush=True)
    executor = make_executor(choice)
    try:
        yield executor
    finally:
        executor.close()


# -- the model -------------------------------------------------------------------------------------
THREADS_HELP = "torch intra-op threads of the engine (default: every usable core, waiting passively; docs/threads.md)"
MODEL_FLAGS: tuple[Flag, ...] = (Flag("--threads", int, THREADS_HELP, low=1, high=4096, metavar="N"),)


TOKENIZER_HELP = (
    "local Hugging Face tokenizer directory the prompt lengths are exact in (default: --model when given, "
    "else the embedded model's)"
)


def add_model_flags(parser: argparse.ArgumentParser, tokenizer: bool = False) -> None:
    parser.add_argument("--model", help="local Hugging Face checkpoint directory (default: the embedded model)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    if tokenizer:
        parser.add_argument("--tokenizer", metavar="PATH", help=TOKENIZER_HELP)
    add_flags(parser, MODEL_FLAGS)


def check_model_flags(args: argparse.Namespace) -> None:
    """The model flags checked (the paths exist) before anything loads."""
    from harness.errors import HarnessInputError

    check_flags(args, MODEL_FLAGS)
    for flag in ("model", "tokenizer"):
        value = getattr(args, flag, None)
        if value is not None and not Path(value).is_dir():
            raise HarnessInputError(f"--{flag} {value}: no such directory")


def load_model_from_args(args: argparse.Namespace) -> LoadedModel:
    from engines import compute_threads
    from engines.model.loader import check_checkpoint, load_model

    check_model_flags(args)
    if args.model is not None:  # a directory that is no checkpoint is refused before torch is imported
        check_checkpoint(Path(args.model))
    compute_threads.configure(args.threads)
    return load_model(args.model, dtype=args.dtype)


# -- gate settings ---------------------------------------------------------------------------------
def add_gate_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per gate setting whose `GateConfig` field has a help text (defaults: the dataclass's)."""
    import typing
    from dataclasses import fields

    from harness.gate.config import GateConfig

    hints = typing.get_type_hints(GateConfig)
    for f in fields(GateConfig):
        if "help" not in f.metadata:
            continue
        flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
        if hints[f.name] is bool:  # a switch: absent leaves the rules file's setting
            parser.add_argument(flag, dest=f"gate_{f.name}", action="store_true", default=None, help=f.metadata["help"])
            continue
        choices = typing.get_args(hints[f.name]) or None
        kind = None if choices else hints[f.name]
        text = f"{f.metadata['help']} (default {f.default})".replace("%", "%%")
        metavar = None if choices else f.name.rsplit("_", 1)[-1].upper()
        parser.add_argument(flag, dest=f"gate_{f.name}", type=kind, choices=choices, metavar=metavar, help=text)


def gate_config(args: argparse.Namespace, command: str, default_rules: tuple[str, ...] = (), **extra: Any) -> Any:
    """The gate's settings: the rules file, then `--rule`s (else `default_rules`), then the flags."""
    from dataclasses import fields

    from harness.errors import HarnessInputError
    from harness.gate import GateConfig, load_rules_file, merged, rules_from_texts, settings_problem

    check_slo_flags(args)
    config = load_rules_file(args.rules) if args.rules else GateConfig()
    rules = (*config.rules, *(rules_from_texts(args.rule) if args.rule else ())) or rules_from_texts(
        list(default_rules)
    )
    flags = {f.name: getattr(args, f"gate_{f.name}", None) for f in fields(GateConfig) if "help" in f.metadata}
    config = merged(config, rules=rules, slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms, **flags, **extra)
    if not config.rules:
        raise HarnessInputError(f"{command}: no rules; give --rules FILE or --rule 'ttft.p99 <= +10%'")
    problem = settings_problem(config)
    if problem is not None:
        raise HarnessInputError(f"{command}: --{problem[0].replace('_', '-')}: {problem[1]}")
    return config


# -- SLO -------------------------------------------------------------------------------------------
def slo_flags(ttft: str = "2000", tpot: str = "200") -> tuple[Flag, ...]:
    """`--slo-ttft-ms` and `--slo-tpot-ms`; `ttft` and `tpot` say what applies when they are not given."""
    return (
        Flag("--slo-ttft-ms", float, f"TTFT SLO in ms (default {ttft})", low=0, above=True, metavar="MS"),
        Flag("--slo-tpot-ms", float, f"TPOT SLO in ms (default {tpot})", low=0, above=True, metavar="MS"),
    )


def add_slo_flags(parser: argparse.ArgumentParser, ttft: str = "2000", tpot: str = "200") -> None:
    add_flags(parser, slo_flags(ttft, tpot))


def check_slo_flags(args: argparse.Namespace) -> None:
    check_flags(args, slo_flags())


def slo_from_args(args: argparse.Namespace) -> SLO:
    from harness.metrics import SLO

    defaults = SLO()
    return SLO(
        ttft_s=args.slo_ttft_ms / 1e3 if args.slo_ttft_ms is not None else defaults.ttft_s,
        tpot_s=args.slo_tpot_ms / 1e3 if args.slo_tpot_ms is not None else defaults.tpot_s,
        job_s=getattr(args, "slo_job_s", None),
    )


# -- a benchmark run -------------------------------------------------------------------------------
def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """Everything `batchmark run` takes; `demo`, `sweep` and `calibrate` take it too."""
    parser.add_argument("--workload", default="chat-small", help="preset name, .toml spec or trace file")
    parser.add_argument(
        "--engine",
        action="append",
        dest="engines",
        metavar="KIND[:key=value,...]",
        help=f"{', '.join(KINDS)}; repeat to compare on the identical schedule (default: static and continuous)",
    )
    parser.add_argument(
        "--scenario",
        choices=SCENARIOS,
        help="open: each request at its scheduled time; closed: --closed-loop-users users; offline: everything "
        "at once (default: closed when the workload has a [closed_loop] section, else open)",
    )
    add_workload_flags(parser)
    add_engine_flags(parser)
    add_model_flags(parser, tokenizer=True)
    add_executor_flags(parser)
    add_flags(parser, RUN_FLAGS)
    add_slo_flags(parser)
    parser.add_argument(
        "--slo-class",
        action="append",
        dest="slo_classes",
        metavar="NAME:ttft_ms=MS,tpot_ms=MS,e2e_ms=MS",
        help="an SLO class for the requests of tenant NAME, with its own targets (any of the three); repeat for "
        "more, the first most urgent: per-class attainment and goodput, the class's rank as request priority, "
        "its TTFT for SLO-aware admission",
    )
    parser.add_argument(
        "--stop-over-saturated",
        action="store_true",
        help="end a run when requests in flight and TTFT both grow beyond statistical doubt (a one-sided test on "
        "their slopes, docs/metrics.md#over-saturation); in a sweep, the climb stops at that rate",
    )
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="live progress on stderr (default on): a bar on a terminal, else a status line every few seconds",
    )


RUN_FLAGS: tuple[Flag, ...] = (
    Flag(
        "--repeat", int, "trials per engine; metrics get CIs across trials", default=1, low=1, high=10_000, metavar="N"
    ),
    Flag("--out", Path, "run directory (default runs/<time>-<workload>)", metavar="DIR"),
    Flag("--price-per-hour", float, "$ per accelerator-hour", default=2.0, low=0, metavar="USD"),
    Flag(
        "--stop-error-rate", float, "end a run when this share of recent requests fail", low=0, high=1, metavar="SHARE"
    ),
    Flag("--stop-in-flight", int, "end a run when more requests than this are in flight", low=1, metavar="N"),
    Flag("--stop-ttft-p99-ms", float, "end a run when recent p99 TTFT exceeds this", low=0, above=True, metavar="MS"),
    Flag(
        "--slo-job-s",
        float,
        "job SLO: a whole session's completion time (docs/metrics.md#jobs)",
        low=0,
        above=True,
        metavar="S",
    ),
    Flag(
        "--stop-run-s",
        float,
        "end each engine run this many seconds after it starts: nothing more is sent, what is in flight is "
        "aborted and recorded (demo: 10 s after the last arrival)",
        low=0,
        above=True,
        metavar="S",
    ),
)


def check_run_flags(args: argparse.Namespace) -> None:
    """Every flag of `add_run_flags` checked, before the workload is built or a model loads: the engine
    options and specs (their table), the run, SLO and model flags (theirs)."""
    check_flags(args, RUN_FLAGS)
    check_slo_flags(args)
    check_model_flags(args)
    engine_flag_values(args)
    slo_classes_from_args(args)


def slo_classes_from_args(args: argparse.Namespace) -> tuple[Any, ...]:  # -> tuple[SLOClass, ...]
    """The `--slo-class` values, parsed; one line naming the class when one is malformed or given twice."""
    from harness.metrics.slo_classes import parse_slo_class

    classes = tuple(parse_slo_class(text) for text in getattr(args, "slo_classes", None) or ())
    names = [c.name for c in classes]
    for name in names:
        if names.count(name) > 1:
            raise HarnessInputError(f"--slo-class {name}: given twice")
    return classes


def scenario_from_args(args: argparse.Namespace, workload: Any) -> Scenario:
    """The scenario is a run setting: `--scenario`, else what the workload suggests."""
    from harness.errors import HarnessInputError
    from harness.loadgen import Scenario

    suggested = Scenario.suggested_by(workload)
    kind = args.scenario or suggested.kind
    if kind == "closed":
        if not workload.closed_loop_users:
            raise HarnessInputError("--scenario closed: give --closed-loop-users N (and --think-time S)")
        return Scenario("closed", workload.closed_loop_users, workload.think_time_s)
    if kind == "sessions" and suggested.kind != "sessions":
        raise HarnessInputError("--scenario sessions: the workload has no sessions (docs/workloads.md, multi-turn)")
    return Scenario(kind)


def run_settings(args: argparse.Namespace, workload: Any) -> RunSettings:
    from harness.loadgen import StopRules
    from harness.loadgen.saturation import OverSaturation
    from harness.progress import default_mode
    from harness.run import RunSettings

    check_run_flags(args)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    slug = Path(workload.name).stem.replace(" ", "_")
    stop = StopRules(
        max_error_rate=args.stop_error_rate,
        max_in_flight=args.stop_in_flight,
        max_ttft_p99_s=args.stop_ttft_p99_ms / 1e3 if args.stop_ttft_p99_ms is not None else None,
        max_run_s=args.stop_run_s,
        over_saturated=OverSaturation() if getattr(args, "stop_over_saturated", False) else None,
    )
    return RunSettings(
        out_dir=args.out or Path("runs") / f"{stamp}-{slug}",
        scenario=scenario_from_args(args, workload),
        repeat=args.repeat,
        seed=args.seed or 0,
        slo=slo_from_args(args),
        price_per_hour=args.price_per_hour,
        stop_rules=stop,
        model_path=args.model,
        tokenizer_path=getattr(args, "tokenizer", None),
        dtype=args.dtype,
        progress=default_mode() if args.progress is not False else None,
        report=not args.no_report,
        workers=getattr(args, "executor_workers", None) or 1,
        threads=args.threads,
        slo_classes=slo_classes_from_args(args),
    )


def default_out(kind: str, name: str) -> Path:
    """`runs/<UTC time>-<kind>-<workload>`, for commands that write a directory of runs."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stamp}-{kind}-{Path(name).stem}"
