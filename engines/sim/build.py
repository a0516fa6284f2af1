"""A simulated engine from its options (`--engine sim:key=value,...`), every bad value caught first.

Options: `scheduler` (continuous or static) and the scheduler options every in-process engine takes;
then either `profile` (a fitted step-time profile, `batchmark sim fit`) or the roofline's `model`,
`hardware`, `tp` and efficiency factors. A profile's measured noise is replayed unless `noise=false`
(`seed` picks the draw; the harness passes the run's seed and trial). The KV pool is the cost model's
capacity (roofline: device memory left after weights and activations; fitted: the pool of the run it
was fitted on) unless `kv_blocks` or `kv_memory_mb` say otherwise.
"""

from __future__ import annotations

import zlib
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from engines.block_manager import blocks_for_budget
from engines.errors import EngineInputError
from engines.options import check_options, continuous_config, defaults
from engines.sim.calibration import CALIBRATED_HARDWARE, DEFAULT_CALIBRATION, NONE, load_calibration
from engines.sim.cluster import ClusterConfig, ClusterEngine
from engines.sim.disagg import DisaggConfig, DisaggEngine
from engines.sim.engine import CostModel, SimEngine, SimOptions
from engines.sim.fit_range import RangeWatch
from engines.sim.fitted import load_profile
from engines.sim.hardware import accelerator
from engines.sim.noise import BLOCK, GAP_STREAM, BlockResampler, StepNoise
from engines.sim.roofline import RooflineCost, RooflineParams
from engines.sim.shape import load_shape
from engines.sim.spec_decode import load_histogram
from engines.static_scheduler import StaticConfig

DEFAULT_MODEL = "llama-3.1-8b"  # `model` has no table default: for an http engine it means the served name
ROOFLINE_KEYS = tuple(f.name for f in fields(RooflineParams))
# Keys that choose the roofline's inputs; a fitted profile already fixes them.
ROOFLINE_ONLY = ("model", "hardware", "tp", "calibration", "stack", *ROOFLINE_KEYS)


def build_sim_engine(values: dict[str, Any], label: str) -> SimEngine:
    """`values` are the spec's options (the engine option table checks them); `label` names the engine."""
    given = {k: v for k, v in values.items() if v is not None and k != "label"}
    checked = check_options("sim", given, f"--engine {label}")
    o = {**defaults("sim"), **checked}
    kind = o["scheduler"]
    static = StaticConfig.from_options(o)
    continuous = continuous_config(o, f"--engine {label}")
    block_size = o["block_size"]
    cost: CostModel
    if o["profile"]:
        fixed = [k for k in ROOFLINE_ONLY if k in checked]
        if fixed:
            raise EngineInputError(f"--engine {label}: profile= fixes the cost model; drop {', '.join(fixed)}")
        fitted = load_profile(o["profile"])
        cost = RangeWatch(fitted)  # prices with the profile, counting the steps beyond its fitted range
        engine = fitted.engine
        bytes_per_token = int(engine.get("kv_bytes_per_token") or 0)
        max_context = int(engine.get("max_context") or 1 << 31)
        default_blocks = engine.get("kv_blocks")
        gap, dispatch = fitted.step_gap_s, fitted.dispatch_s
        source = {"profile": str(o["profile"]), "fitted_on": fitted.fit.get("sources")}
        fit: dict[str, Any] | None = fitted.fit
    else:
        shape = load_shape(o["model"] or DEFAULT_MODEL)
        hw = accelerator(o["hardware"])
        params, calibrated = _roofline_params(o, checked, label, hw.name)
        roofline = RooflineCost(shape, hw, o["tp"], params)
        cost = roofline
        bytes_per_token = roofline.kv_bytes_per_token
        max_context = shape.max_context
        capacity = roofline.kv_capacity_bytes(continuous.max_batched_tokens, continuous.max_running)
        default_blocks = blocks_for_budget(capacity, bytes_per_token, block_size)
        gap = dispatch = 0.0
        fit = None
        source = {"model": shape.name, "hardware": hw.name, "tp": roofline.tp, **calibrated}
    if "kv_blocks" in checked:
        num_blocks = int(o["kv_blocks"])
    elif "kv_memory_mb" in checked:  # the table's default is the in-process engines': a sim's is the cost model's
        if bytes_per_token <= 0:
            raise EngineInputError(f"--engine {label}: kv_memory_mb needs the profile's kv_bytes_per_token")
        num_blocks = blocks_for_budget(int(o["kv_memory_mb"] * 2**20), bytes_per_token, block_size)
    elif default_blocks:
        num_blocks = int(default_blocks)
    else:
        raise EngineInputError(f"--engine {label}: the profile records no KV pool; give kv_blocks or kv_memory_mb")
    if num_blocks < 1:
        raise EngineInputError(f"--engine {label}: the KV pool holds no block of {block_size} tokens")
    step_noise = gap_noise = None
    if o["profile"] and o["noise"] and fitted.noise:
        seed = o["seed"] if o["seed"] is not None else zlib.crc32(label.encode())  # engines draw apart
        step_noise = StepNoise.from_profile(fitted.noise, seed)
        gaps = fitted.noise.get("gap_s")
        gap_noise = BlockResampler(gaps, [seed, GAP_STREAM]) if gaps else None
        source["noise"] = f"measured, replayed in blocks spanning {BLOCK} steps of the measured run (seed {seed})"
    spec = load_histogram(Path(o["spec_decode"])) if o["spec_decode"] else None
    if spec is not None and kind != "continuous":
        raise EngineInputError(f"--engine {label}: spec_decode needs scheduler=continuous")
    spec_seed = o["seed"] if o["seed"] is not None else zlib.crc32(label.encode())
    options = SimOptions(
        kind=kind,
        policy=o["policy"],
        aging_s=o["aging_s"],
        static=static,
        continuous=continuous,
        block_size=block_size,
        num_blocks=num_blocks,
        step_gap_s=gap,
        dispatch_s=dispatch,
        slowdown=o["slowdown"],
        step_scale=o["step_scale"],
        step_scale_shapes=_scaled_shapes(o, fit, label),
        prefix_caching=o["prefix_caching"],
        spec_decode=spec,
        spec_seed=spec_seed,
    )
    if o["twin"]:
        source["twin"] = o["twin"]  # the measured engine this one simulates (fidelity pairs them)
    description = {"simulated_with": {"cost_model": cost.kind, **source}, "kv_bytes_per_token": bytes_per_token}
    return SimEngine(
        options,
        cost,
        max_context=max_context,
        name=label,
        description=description,
        step_noise=step_noise,
        gap_noise=gap_noise,
    )


def _scaled_shapes(o: dict[str, Any], fit: dict[str, Any] | None, label: str) -> frozenset[str] | None:
    """The step shapes `step_scale` applies to: with `step_scale_shapes=measured`, the profile's fit-run shapes that
    have a level (`fit.shape_levels`, engines/sim/shape_speed.py), the ones a trial's speed is measured on; None:
    every step."""
    if o["step_scale_shapes"] == "all":
        return None
    levels = None if fit is None else fit.get("shape_levels")
    if not levels:  # a roofline, or a profile fitted before it kept levels: no shape was measured
        raise EngineInputError(
            f"--engine {label}: step_scale_shapes=measured needs a profile that keeps its fit runs' shape levels "
            "(fit.shape_levels; fit it again)"
        )
    return frozenset(levels)


def _roofline_params(
    o: dict[str, Any], checked: dict[str, Any], label: str, hardware: str
) -> tuple[RooflineParams, dict[str, str]]:
    """A calibration's values under its stack with any key given explicitly on top (the default calibration where
    the accelerator has one), or the table's values (calibration=none, or an accelerator without one)."""
    name = o["calibration"] or (DEFAULT_CALIBRATION if hardware in CALIBRATED_HARDWARE else NONE)
    if name == NONE:
        if o["stack"]:
            raise EngineInputError(
                f"--engine {label}: stack= picks a calibration's floors; calibration=none (or "
                f"hardware without a calibration) has none"
            )
        return RooflineParams(**{k: o[k] for k in ROOFLINE_KEYS}), {}
    calibration = load_calibration(name)
    stack = o["stack"] or calibration.default_stack
    params = replace(calibration.params_for(stack), **{k: checked[k] for k in ROOFLINE_KEYS if k in checked})
    return params, {"calibration": calibration.name, "stack": stack}


def build_sim_cluster(values: dict[str, Any], label: str) -> ClusterEngine:
    """`values`: the replicas' sim options plus `cluster` (a `ClusterConfig`); replica i draws noise apart."""
    config: ClusterConfig = values["cluster"]
    sim = {k: v for k, v in values.items() if k != "cluster"}
    seed = sim.get("seed")
    router = replace(config.router, seed=seed if seed is not None else config.router.seed)
    replicas = [
        build_sim_engine({**sim, "seed": None if seed is None else seed + i}, f"{label}/r{i}")
        for i in range(config.replicas)
    ]
    return ClusterEngine(replace(config, router=router), replicas, label)


def build_sim_disagg(values: dict[str, Any], label: str) -> DisaggEngine:
    """`values`: the replicas' sim options plus `disagg` (a `DisaggConfig`); the decode pool may differ in GPU."""
    config: DisaggConfig = values["disagg"]
    sim = {k: v for k, v in values.items() if k != "disagg"}
    seed = sim.get("seed")
    decode_sim = {**sim, "hardware": config.decode_hardware} if config.decode_hardware else sim

    def pool(options: dict[str, Any], n: int, name: str, first: int) -> list[SimEngine]:
        return [
            build_sim_engine({**options, "seed": None if seed is None else seed + first + i}, f"{label}/{name}{i}")
            for i in range(n)
        ]

    prefill = pool(sim, config.prefill, "p", 0)
    try:
        decode = pool(decode_sim, config.decode, "d", config.prefill)
    except EngineInputError as e:  # say which pool: the decode pool's GPU may be its own
        raise EngineInputError(f"--engine {label}: the decode pool ({config.decode_hardware}): {e}") from None
    kv = int(prefill[0].describe().get("kv_bytes_per_token") or 0)
    if kv <= 0:
        raise EngineInputError(f"--engine {label}: the replicas' cost model gives no kv_bytes_per_token to transfer")
    if int(decode[0].describe().get("kv_bytes_per_token") or 0) != kv:
        raise EngineInputError(f"--engine {label}: the prefill and decode pools hold KV of different sizes per token")
    return DisaggEngine(config, prefill, decode, label, kv)
