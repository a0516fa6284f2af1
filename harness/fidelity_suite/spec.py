"""The suite file: its pairs, profiles, fit run and targets, checked before anything runs (one line, exit 2)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from engines.options import SCALE_SHAPES as SPEED_SHAPES
from engines.options import ScaleShapes as SpeedShapes
from harness.errors import HarnessInputError
from workloads.errors import deepest_line


@dataclass(frozen=True)
class Targets:
    median_tolerance: float  # TTFT/TPOT/E2E p50 and output tok/s
    p99_tolerance: float  # TTFT/TPOT/E2E p99 (or within the real run's trial spread)
    pairs_to_hold: int


@dataclass(frozen=True)
class Tipping:
    """`[judge] tipping_elasticity` and `sensitivity`: a latency whose twins' elasticity to the step price, measured
    at x(1 -+ fraction), exceeds `elasticity` cannot tell (harness/judge/fidelity.py)."""

    elasticity: float
    fraction: float


@dataclass(frozen=True)
class Profile:
    name: str
    file: str  # relative to the runs directory
    engine: str  # the fit run's engine it is fitted on


@dataclass(frozen=True)
class Pair:
    name: str
    covers: str
    args: tuple[str, ...]  # `batchmark run` workload flags
    engine: str  # one `--engine` spec of an in-process engine
    profile: str


@dataclass(frozen=True)
class Suite:
    path: Path
    trials: int
    run_args: tuple[str, ...]
    fit_name: str
    fit_args: tuple[str, ...]
    targets: Targets
    profiles: dict[str, Profile]
    pairs: tuple[Pair, ...]
    # `[fit_run] after`: pairs after each of which the fit run is run again (the machine's speed drifts over a
    # session, so one fit run prices one moment of it; the profiles pool every fit run)
    fit_after: tuple[str, ...] = ()
    # `interleave = true`: the trials are measured in rounds, each a fit run and then one trial of every pair in
    # order, so that a pair's trials sample the session's moments as the pooled fit runs do (back to back, they
    # share one moment, and the machine drifts 10-15% within a session: the eighth suite)
    interleave: bool = False
    # `[judge] at_trial_speed = true`: a second verdict beside the plain one, each trial's twins at that trial's own
    # measured speed (step_scale = 1 + speed; harness/fidelity_suite/at_speed.py), never in the plain one's place
    at_trial_speed: bool = False
    # `[judge] at_trial_speed_shapes = "measured"`: the at-speed twins scale only the steps of the shapes the speed
    # was measured on (the profile's fit-run shape levels), every other step at its plain price; "all": every step
    at_trial_speed_shapes: SpeedShapes = "all"
    # `[judge] tipping_elasticity = X` with `sensitivity = F`: the registered sensitivity rule, in both verdicts
    tipping: Tipping | None = None

    @property
    def fit_names(self) -> tuple[str, ...]:
        """Every fit run's directory: the first before the pairs, then NAME-2, NAME-3, ... after `fit_after`'s pairs
        (interleaved: one at the start of each round)."""
        count = self.trials if self.interleave else len(self.fit_after) + 1
        return (self.fit_name, *(f"{self.fit_name}-{i}" for i in range(2, count + 1)))

    def pair_runs(self, pair: Pair) -> tuple[str, ...]:
        """The directories of a pair's real runs: one of all its trials, or (interleaved) NAME, NAME-2, ... one a
        round."""
        if not self.interleave:
            return (pair.name,)
        return (pair.name, *(f"{pair.name}-{i}" for i in range(2, self.trials + 1)))


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = table.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise HarnessInputError(f"{where}: field {key!r}: missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _args(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise HarnessInputError(f"{where}: field {key!r}: not a list of strings")
    return tuple(value)


def load_suite(path: Path) -> Suite:
    """The suite at `path`, every pair's workload, engine and profile checked to exist."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise HarnessInputError(f"--suite {path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise HarnessInputError(f"--suite {path}: not UTF-8 text (a binary file?)") from None
    except tomllib.TOMLDecodeError as exc:
        raise HarnessInputError(f"--suite {path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise HarnessInputError(f"--suite {path}:{deepest_line(text)}: not valid TOML (nested too deeply)") from None
    where = str(path)
    targets = _get(data, "targets", dict, where)
    fit = _get(data, "fit_run", dict, where)
    profiles = {}
    for name, table in _get(data, "profiles", dict, where).items():
        at = f"{where}: profiles.{name}"
        profiles[name] = Profile(name, _get(table, "file", str, at), _get(table, "engine", str, at))
    pairs = []
    for i, table in enumerate(_get(data, "pairs", list, where)):
        at = f"{where}: pairs[{i}]"
        pair = Pair(
            _get(table, "name", str, at),
            str(table.get("covers", "")),
            _args(table, "args", at),
            _get(table, "engine", str, at),
            _get(table, "profile", str, at),
        )
        _check_pair(pair, profiles, f"{where}: pair {pair.name!r}")
        pairs.append(pair)
    names = [p.name for p in pairs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise HarnessInputError(f"{where}: pair {twice[0]!r} given twice")
    if not pairs:
        raise HarnessInputError(f"{where}: no [[pairs]]")
    after = _fit_after(fit, names, f"{where}: fit_run")
    interleave = data.get("interleave", False)
    if not isinstance(interleave, bool):
        raise HarnessInputError(f"{where}: field 'interleave': not true or false")
    if interleave and after:
        raise HarnessInputError(
            f"{where}: fit_run: field 'after': an interleaved suite runs a fit run at the start of each round; drop it"
        )
    return Suite(
        path,
        _get(data, "trials", int, where),
        _args(data, "run_args", where),
        _get(fit, "name", str, where),
        _args(fit, "args", f"{where}: fit_run"),
        Targets(
            float(_get(targets, "median_tolerance", (int, float), where)),
            float(_get(targets, "p99_tolerance", (int, float), where)),
            int(_get(targets, "pairs_to_hold", int, where)),
        ),
        profiles,
        tuple(pairs),
        after,
        interleave,
        _at_trial_speed(_judge(data, where), where),
        _at_trial_speed_shapes(_judge(data, where), where),
        _tipping(_judge(data, where), where),
    )


JUDGE_FIELDS = ("at_trial_speed", "at_trial_speed_shapes", "tipping_elasticity", "sensitivity")
# the rule's bounds: below 1 a metric moving in proportion to the price (a TPOT) could not be judged; the fraction as
# `sim fidelity --sensitivity` takes it (at 0.5 the twins run at half and 1.5 times the price)
TIPPING_RANGE = (1.0, 100.0)
FRACTION_RANGE = (0.0, 0.5)


def _judge(data: dict[str, Any], where: str) -> dict[str, Any]:
    """`[judge]` (default empty): a table of known keys; any other key is refused."""
    judge = data.get("judge", {})
    if not isinstance(judge, dict):
        raise HarnessInputError(f"{where}: field 'judge': not a table ([judge])")
    unknown = sorted(set(judge) - set(JUDGE_FIELDS))
    if unknown:
        raise HarnessInputError(f"{where}: judge: unknown field {unknown[0]!r} (known: {', '.join(JUDGE_FIELDS)})")
    return judge


def _at_trial_speed(judge: dict[str, Any], where: str) -> bool:
    """`[judge] at_trial_speed` (default false): a bool."""
    value = judge.get("at_trial_speed", False)
    if not isinstance(value, bool):
        raise HarnessInputError(f"{where}: judge: field 'at_trial_speed': not true or false")
    return value


def _at_trial_speed_shapes(judge: dict[str, Any], where: str) -> SpeedShapes:
    """`[judge] at_trial_speed_shapes` (default "all"): "all" or "measured", and only beside `at_trial_speed = true`
    (it says which steps that verdict's twins scale)."""
    if "at_trial_speed_shapes" not in judge:
        return "all"
    value = judge["at_trial_speed_shapes"]
    if not isinstance(value, str) or value not in SPEED_SHAPES:
        known = " or ".join(f'"{s}"' for s in SPEED_SHAPES)
        raise HarnessInputError(f"{where}: judge: field 'at_trial_speed_shapes': {value!r} is not {known}")
    if not _at_trial_speed(judge, where):
        raise HarnessInputError(
            f"{where}: judge: field 'at_trial_speed_shapes': only with at_trial_speed = true (the verdict it shapes)"
        )
    return cast(SpeedShapes, value)


def _tipping(judge: dict[str, Any], where: str) -> Tipping | None:
    """`[judge] tipping_elasticity` in [1, 100] with `sensitivity` in (0, 0.5], both or neither (None: no rule)."""
    if "tipping_elasticity" not in judge and "sensitivity" not in judge:
        return None
    if "sensitivity" not in judge:
        raise HarnessInputError(
            f"{where}: judge: field 'sensitivity': missing (the price fraction the tipping rule's elasticity is "
            "measured at, e.g. 0.1)"
        )
    if "tipping_elasticity" not in judge:
        raise HarnessInputError(f"{where}: judge: field 'tipping_elasticity': missing (the rule 'sensitivity' is for)")
    elasticity = _bounded(judge, "tipping_elasticity", TIPPING_RANGE, where, closed=True)
    return Tipping(elasticity, _bounded(judge, "sensitivity", FRACTION_RANGE, where, closed=False))


def _bounded(judge: dict[str, Any], key: str, bounds: tuple[float, float], where: str, *, closed: bool) -> float:
    """A number within `bounds` (the low end excluded unless `closed`; the high end included)."""
    value = judge[key]
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HarnessInputError(f"{where}: judge: field {key!r}: not a number ({value!r})")
    if not ((low <= value if closed else low < value) and value <= high):  # nan fails every comparison
        span = f"{'[' if closed else '('}{low:g}, {high:g}]"
        raise HarnessInputError(f"{where}: judge: field {key!r}: {value!r} is outside {span}")
    return float(value)


def _fit_after(fit: dict[str, Any], pairs: list[str], where: str) -> tuple[str, ...]:
    after = _args(fit, "after", where)
    for i, name in enumerate(after):
        if name not in pairs:
            known = ", ".join(pairs)
            raise HarnessInputError(f"{where}: field 'after': unknown pair {name!r} (the suite's pairs: {known})")
        if name in after[:i]:
            raise HarnessInputError(f"{where}: field 'after': pair {name!r} given twice")
    return after


def pair_workload(pair: Pair) -> str:
    """The workload a pair's args name (`--workload X`; `batchmark run`'s default otherwise)."""
    args = list(pair.args)
    return args[args.index("--workload") + 1] if "--workload" in args[:-1] else "chat-small"


def _check_pair(pair: Pair, profiles: dict[str, Profile], where: str) -> None:
    from engines.options import IN_PROCESS
    from harness.engine_specs import parse_engine_specs
    from workloads.presets import list_presets

    workload = pair_workload(pair)
    if workload not in list_presets() and not Path(workload).is_file():
        raise HarnessInputError(f"{where}: unknown workload {workload!r} (a preset: {', '.join(list_presets())})")
    try:
        spec = parse_engine_specs([pair.engine], {})[0]
    except HarnessInputError as exc:  # an unknown engine or option: its own line, said of this pair
        raise HarnessInputError(f"{where}: {exc}") from None
    if spec.kind not in IN_PROCESS:
        raise HarnessInputError(f"{where}: engine {pair.engine!r}: only in-process engines have twins")
    if pair.profile not in profiles:
        known = ", ".join(profiles) or "none"
        raise HarnessInputError(f"{where}: unknown profile {pair.profile!r} (the suite's profiles: {known})")
