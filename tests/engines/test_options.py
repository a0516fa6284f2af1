"""The engine option table: one row per option, checked the same way from a flag or a spec key."""

from __future__ import annotations

import math

import pytest

from engines.errors import EngineInputError
from engines.options import ENGINE_OPTIONS, KINDS, OPTIONS, PROFILES, check_options, defaults, in_process_options


def test_every_default_passes_its_own_check_and_every_kind_is_known():
    for option in ENGINE_OPTIONS:
        assert set(option.kinds) <= set(KINDS), option.name
        for profile in ("online", *PROFILES):
            value = option.default_for(profile)
            assert option.check(value, "default") == value, option.name
    flags = [o.flag_name for o in ENGINE_OPTIONS if o.flag] + [a for o in ENGINE_OPTIONS for a in o.aliases]
    assert len(flags) == len(set(flags))


def test_defaults_that_differ_are_named_profiles_with_a_reason():
    differing = {(o.name, p) for o in ENGINE_OPTIONS for p in o.profiles}
    assert differing == {("max_batched_tokens", "serve"), ("max_batched_tokens", "offline")}
    assert all(p in PROFILES and PROFILES[p] for _, p in differing)
    assert in_process_options("continuous", {}).continuous.max_batched_tokens == 512
    assert in_process_options("continuous", {}, "serve").continuous.max_batched_tokens == 2048


@pytest.mark.parametrize(
    ("kind", "values", "needle"),
    [
        ("continuous", {"max_running": "0"}, "max_running='0' must be >= 1"),
        ("continuous", {"max_running": "lots"}, "is not an integer"),
        ("continuous", {"kv_memory_mb": "nan"}, "must be a finite number"),
        ("continuous", {"kv_memory_mb": "0"}, "must be > 0"),
        ("static", {"batch_timeout_ms": "-1"}, "must be >= 0"),
        ("continuous", {"policy": "lottery"}, "expected one of fcfs"),
        ("continuous", {"chunked_prefill": "maybe"}, "is not true/false"),
        ("http", {"api": "grpc"}, "expected one of completions, chat"),
        ("zero", {"max_running": "4"}, "does not apply to a zero engine"),
        ("continuous", {"colour": "red"}, "unknown option 'colour'"),
    ],
)
def test_bad_values_are_one_clear_error(kind, values, needle):
    with pytest.raises(EngineInputError, match=needle):
        check_options(kind, values, "--engine x")


def test_spec_strings_convert_to_the_table_types():
    got = check_options("continuous", {"max_running": "8", "chunked_prefill": "false", "kv_memory_mb": "64"}, "x")
    assert got == {"max_running": 8, "chunked_prefill": False, "kv_memory_mb": 64.0}
    options = in_process_options("continuous", got)
    assert (options.continuous.max_running, options.continuous.chunked_prefill, options.kv.memory_mb) == (8, False, 64)


def test_a_flag_error_names_the_flag():
    with pytest.raises(EngineInputError, match=r"^--max-running 0: must be >= 1$"):
        OPTIONS["max_running"].check_flag("0")
    assert math.isclose(OPTIONS["step_delay_ms"].check_flag("2.5"), 2.5)


def test_each_kind_has_its_options():
    assert set(defaults("zero")) == {"label"}
    assert {"url", "model", "api", "timeout_s", "connections", "api_key_env"} <= set(defaults("http"))
    assert "max_running" in defaults("continuous") and "max_running" not in defaults("static")
