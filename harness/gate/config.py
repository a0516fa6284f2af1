"""The rules file (`gate.toml`): settings in `[gate]`, rules as strings in `rules = [...]` or as
`[[rule]]` tables. Every mistake becomes one HarnessInputError naming the file, the line and the field.

tomllib reports no positions for valid TOML, so a rule's line is found by searching the source for
its string; a setting's line by searching for `key =`.
"""

from __future__ import annotations

import math
import re
import tomllib
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessInputError
from harness.gate.rules import Rule, RuleError, parse_rule
from harness.judge.pairing_mode import PairingMode
from workloads.errors import deepest_line

Unit = Literal["auto", "request", "trial"]


UNIT_HELP = "what is independent: requests or whole trials (auto: trials when both runs hold --min-trials)"


@dataclass(frozen=True)
class GateConfig:
    """The gate's settings (a rules file's `[gate]` table, or flags) and its rules. A field with a `help`
    in its metadata is also a command-line flag (`harness.cli.args.add_gate_flags`)."""

    alpha: float = field(default=0.05, metadata={"help": "significance level a regression must reach to fail"})
    n_boot: int = field(default=2000, metadata={"help": "bootstrap resamples for intervals and tail tests"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed", "flag": "--gate-seed"})
    min_samples: int = 10  # fewer values than this on either side: the rule cannot be judged (no_data)
    pairing: PairingMode = field(
        default="auto", metadata={"help": "auto: paired when both runs replayed the identical schedule"}
    )
    buckets: int = 10  # a rate's steady window is cut into this many slices to see its noise
    unit: Unit = field(default="auto", metadata={"help": UNIT_HELP})
    min_trials: int = field(default=3, metadata={"help": "trials per side for auto to judge trials"})
    allow_inconclusive: bool = field(
        default=False, metadata={"help": "pass rules the data cannot decide (recorded in the verdict)"}
    )
    baseline_engine: str | None = None
    candidate_engine: str | None = None
    slo_ttft_ms: float | None = None  # SLO for goodput and slo_attainment; default: the baseline run's
    slo_tpot_ms: float | None = None
    slo_e2e_ms: float | None = None
    rules: tuple[Rule, ...] = field(default_factory=tuple)


def _setting_types() -> dict[str, tuple[type, ...]]:
    """What a rules file may write for each setting, from GateConfig's annotations (a float takes an int)."""
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in typing.get_type_hints(GateConfig).items():
        if name == "rules":
            continue
        kinds = {bool: (bool,), float: (float, int), int: (int,)}
        base = next((t for t in (bool, float, int) if hint is t or t in typing.get_args(hint)), str)
        out[name] = kinds.get(base, (str,))
    return {**out, "engine": (str,)}  # one engine label for both sides


_SETTING_TYPES = _setting_types()
_RULE_KEYS = ("check", "alpha")


def settings_problem(config: GateConfig) -> tuple[str, str] | None:
    """The first out-of-range setting as (field, problem), or None; shared by the file and the command line."""
    checks = (
        ("alpha", not 0 < config.alpha <= 1, "in (0, 1]"),
        ("n_boot", config.n_boot < 100, ">= 100"),
        ("min_samples", config.min_samples < 2, ">= 2"),
        ("buckets", config.buckets < 3, ">= 3"),
        ("pairing", config.pairing not in ("auto", "paired", "unpaired"), "auto, paired or unpaired"),
        ("unit", config.unit not in ("auto", "request", "trial"), "auto, request or trial"),
        ("min_trials", config.min_trials < 2, ">= 2"),
    )
    for name, bad, allowed in checks:
        if bad:
            return name, f"{getattr(config, name)!r} must be {allowed}"
    for name in ("slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms"):  # NaN fails both comparisons
        value = getattr(config, name)
        if value is not None and not 0 < value < math.inf:
            return name, f"{value!r} must be a number of milliseconds > 0"
    for rule in config.rules:
        if rule.alpha is not None and not 0 < rule.alpha <= 1:
            return "alpha", f"rule {rule.text!r}: alpha {rule.alpha!r} must be in (0, 1]"
    return None


def rules_from_texts(texts: list[str], where: str = "--rule") -> tuple[Rule, ...]:
    out = []
    for text in texts:
        try:
            out.append(parse_rule(text))
        except RuleError as exc:
            raise HarnessInputError(f"{where}: field {exc.field}: {exc}") from None
    return tuple(out)


def load_rules_file(path: Path) -> GateConfig:
    """Read a rules file; raises HarnessInputError as `FILE:LINE: field NAME: problem`."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HarnessInputError(f"{path}: cannot read the rules file ({exc.strerror})") from None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise HarnessInputError(f"{path}:{line}: field file: not UTF-8 text (a binary file?)") from None
    lines = source.splitlines()
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        line = _line_from_message(str(exc)) or (len(lines) if "end of document" in str(exc) else None)
        problem = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise HarnessInputError(
            f"{path}:{line or '?'}: field {_key_on_line(lines, line)}: not valid TOML: {problem}"
        ) from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        line = deepest_line(source)
        raise HarnessInputError(f"{path}:{line}: field {_key_on_line(lines, line)}: nested too deeply") from None

    def fail(line: int | None, name: str, problem: str) -> HarnessInputError:
        return HarnessInputError(f"{path}:{line or '?'}: field {name}: {problem}")

    unknown = sorted(set(data) - {"gate", "rules", "rule"})
    if unknown:
        raise fail(_find_table(lines, unknown[0]), unknown[0], "unknown table or key (known: [gate], rules, [[rule]])")
    settings = data.get("gate", {})
    if not isinstance(settings, dict):
        raise fail(_find_key(lines, "gate"), "gate", "must be a table: [gate]")
    values: dict[str, Any] = {}
    listed = settings.pop("rules", None)  # `rules = [...]` written after [gate] lands in that table
    if listed is not None:
        data = {**data, "rules": [*_as_list(listed), *_as_list(data.get("rules", []))]}
    for key, value in settings.items():
        kinds = _SETTING_TYPES.get(key)
        if kinds is None:
            raise fail(_find_key(lines, key), f"gate.{key}", f"unknown setting (known: {', '.join(_SETTING_TYPES)})")
        if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds):
            raise fail(_find_key(lines, key), f"gate.{key}", f"expected a {kinds[0].__name__}, got {value!r}")
        values[key] = float(value) if float in kinds else value
    engine = values.pop("engine", None)
    if engine is not None:  # one engine label for both sides, the common case
        values.setdefault("baseline_engine", engine)
        values.setdefault("candidate_engine", engine)
    rules = _rules(data, lines, fail)
    config = GateConfig(**values, rules=tuple(rules))
    problem = settings_problem(config)
    if problem is not None:
        name, text = problem
        raise fail(_find_key(lines, name), f"gate.{name}", text)
    return config


def _rules(data: dict[str, Any], lines: list[str], fail: Any) -> list[Rule]:
    rules: list[Rule] = []
    after = 0  # search each string's line after the previous one's, so repeated rules land on their own lines
    listed = data.get("rules", [])
    if not isinstance(listed, list):
        raise fail(_find_key(lines, "rules"), "rules", "must be a list of strings")
    for i, text in enumerate(listed):
        if isinstance(text, str):
            line = _find_string(lines, text, after)
        else:  # a number or table where a rule string belongs: find its text after the previous rule
            token = str(text).lower() if isinstance(text, bool | int | float) else "{"
            line = next((i + 1 for i in range(after, len(lines)) if token in lines[i]), _find_key(lines, "rules"))
        if not isinstance(text, str):
            raise fail(line, f"rules[{i}]", f'expected a string such as "ttft.p99 <= +10%", got {text!r}')
        rules.append(_parse(text, None, line, f"rules[{i}]", fail))
        after = line or after
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise fail(_find_key(lines, "rule"), "rule", "use [[rule]] tables")
    for i, table in enumerate(tables):
        line = _find_table(lines, "rule", nth=i)
        unknown = sorted(set(table) - set(_RULE_KEYS))
        if unknown:
            raise fail(
                _find_key(lines, unknown[0], line or 0),
                f"rule[{i}].{unknown[0]}",
                f"unknown key (known: {', '.join(_RULE_KEYS)})",
            )
        check = table.get("check")
        if not isinstance(check, str):
            raise fail(line, f"rule[{i}].check", 'each [[rule]] needs check = "METRIC[.STAT] <= THRESHOLD"')
        alpha = table.get("alpha")
        if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, int | float)):
            raise fail(_find_key(lines, "alpha", line or 0), f"rule[{i}].alpha", f"expected a number, got {alpha!r}")
        check_line = _find_string(lines, check, line or 0) or line
        rules.append(_parse(check, None if alpha is None else float(alpha), check_line, f"rule[{i}].check", fail))
    if not rules:
        raise fail(None, "rules", "the file holds no rule")
    return rules


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _parse(text: str, alpha: float | None, line: int | None, name: str, fail: Any) -> Rule:
    try:
        return parse_rule(text, alpha=alpha, line=line)
    except RuleError as exc:
        raise fail(line, f"{name}.{exc.field}" if exc.field != "rule" else name, str(exc)) from None


def merged(config: GateConfig, **overrides: Any) -> GateConfig:
    """`config` with the given settings replaced where they are not None (command-line flags)."""
    known = {f.name for f in fields(GateConfig)}
    return replace(config, **{k: v for k, v in overrides.items() if v is not None and k in known})


def _find_string(lines: list[str], text: str, after: int = 0) -> int | None:
    for quote in ('"', "'"):
        needle = f"{quote}{text}{quote}"
        for i in range(after, len(lines)):
            if needle in lines[i]:
                return i + 1
    return None


def _find_key(lines: list[str], key: str, after: int = 0) -> int | None:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    return next((i + 1 for i in range(after, len(lines)) if pattern.match(lines[i])), None)


def _find_table(lines: list[str], name: str, nth: int = 0) -> int | None:
    pattern = re.compile(rf"^\s*\[\[?\s*{re.escape(name)}\s*\]\]?")
    hits = [i + 1 for i, text in enumerate(lines) if pattern.match(text)]
    return hits[nth] if nth < len(hits) else _find_key(lines, name)


def _line_from_message(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else None


def _key_on_line(lines: list[str], line: int | None) -> str:
    if line is None or not 0 < line <= len(lines):
        return "?"
    m = re.match(r"^\s*\[*\s*([A-Za-z0-9_.-]+)", lines[line - 1])
    return m.group(1) if m else "?"
