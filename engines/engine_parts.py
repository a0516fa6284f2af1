"""What an in-process engine is made of: its options, and the block manager, model runner, scheduler and
engine loop they build. The thread engine builds them in its own process, the process engine's child in
its (engines/engine_process.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from engines.aging import aged
from engines.block_manager import BlockManager, blocks_for_budget
from engines.errors import EngineInputError
from engines.model.loader import LoadedModel
from engines.policy import make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.static_scheduler import StaticConfig, StaticScheduler

if TYPE_CHECKING:  # the loop and the runner import torch: options are read (serve, a run's flags) before it loads
    from engines.engine_core import EngineCore

Kind = Literal["static", "continuous"]


@dataclass(frozen=True)
class KVConfig:
    """The KV-cache pool: block size and either a memory budget or an exact block count."""

    block_size: int = 16
    memory_mb: float = 256.0  # the KV pool's budget; sets how many blocks exist
    blocks: int | None = None  # an exact pool size, overriding memory_mb (tests, tiny pools)
    prefix_caching: bool = True  # full blocks of shared prefixes are kept and reused (engines/block_manager.py)

    def num_blocks(self, bytes_per_token: int) -> int:
        if self.blocks is not None:
            return self.blocks
        return blocks_for_budget(int(self.memory_mb * 2**20), bytes_per_token, self.block_size)


@dataclass(frozen=True)
class EngineOptions:
    """Everything that configures an in-process engine (built from the option table, `engines/options.py`)."""

    kind: Kind = "continuous"
    policy: str = "fcfs"
    aging_s: float | None = None  # starvation aging (engines/aging.py)
    kv: KVConfig = field(default_factory=KVConfig)
    static: StaticConfig = field(default_factory=StaticConfig)
    continuous: ContinuousConfig = field(default_factory=ContinuousConfig)
    step_delay_s: float = 0.0
    slowdown: float = 0.0  # 0.1 = every step takes 10% longer (gate calibration)
    # the loop in a child process (engines/engine_process.py): off when built directly, on by the option table
    engine_process: bool = False


def num_kv_blocks(loaded: LoadedModel, options: EngineOptions) -> int:
    """The KV pool's size in blocks; an EngineInputError if the budget holds none."""
    from engines.model_runner import ModelRunner

    bytes_per_token = ModelRunner.kv_bytes_per_token(loaded.model)
    num_blocks = options.kv.num_blocks(bytes_per_token)
    if num_blocks < 1:
        raise EngineInputError(
            f"--kv-memory-mb {options.kv.memory_mb}: holds no block of {options.kv.block_size} tokens "
            f"at {bytes_per_token} bytes per token"
        )
    return num_blocks


def build_core(loaded: LoadedModel, options: EngineOptions) -> EngineCore:
    """The block manager, model runner, scheduler and engine loop that `options` describe, on `loaded`."""
    from engines.engine_core import EngineCore
    from engines.model_runner import ModelRunner

    num_blocks = num_kv_blocks(loaded, options)
    blocks = BlockManager(num_blocks, options.kv.block_size, options.kv.prefix_caching)
    pad = loaded.tokenizer.pad_token_id
    runner = ModelRunner(loaded.model, num_blocks, options.kv.block_size, pad if pad is not None else 0)
    policy = aged(make_policy(options.policy), options.aging_s)
    eos = loaded.eos_token_id
    scheduler: StaticScheduler | ContinuousScheduler
    if options.kind == "static":
        scheduler = StaticScheduler(options.static, policy, blocks, eos)
    else:
        scheduler = ContinuousScheduler(options.continuous, policy, blocks, eos)
    return EngineCore(
        scheduler,
        runner,
        blocks_total=lambda: blocks.num_blocks,
        blocks_used=lambda: blocks.num_used,
        step_delay_s=options.step_delay_s,
        slowdown=options.slowdown,
    )
