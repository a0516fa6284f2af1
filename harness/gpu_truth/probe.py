"""Measure step times on this machine's accelerator: truth rows for `batchmark sim validate`, made here.

The shapes are fixed before measuring (`plan`, committed): prefills of one prompt of 16 to 8,192 tokens and of
four prompts, decodes of 1 to 256 sequences at 128 to 16,384 cached tokens, and mixed steps (a prompt chunk of
256 to 2,048 tokens, fresh or after 2,048 cached, beside 8 or 64 decodes), as far as the KV budget allows.
Each shape runs on `harness.gpu_truth.decoder.Decoder` (plain torch: fused projections, flash attention, a KV
cache) and is timed two ways:

- `graph`: the step captured once as a CUDA graph and replayed: the kernels alone, with no Python between
  them, as vLLM's and TensorRT-LLM's graphs run decode. These are the truth rows (source `batchmark-graph`,
  stack `batchmark-torch` in `harness.gpu_truth.predict`): STEPS and MIXED in the `-o` folder.
- `eager`: the same step launched op by op from Python: the floor a Python serving loop adds, written beside
  them for the record (`--eager`: EAGER), never validated against.

Each time is the median of `repeats` replays timed by CUDA events after three warm-ups; the minimum and maximum
are kept as the spread. Rows stream to the CSV as they are measured, so a run stopped early keeps its rows.
On a CPU (`--device cpu`, for tests) steps are timed by the wall clock, without graphs.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

PREFILL = (
    (1, 16),
    (1, 64),
    (1, 128),
    (1, 256),
    (1, 512),
    (1, 1024),
    (1, 2048),
    (1, 4096),
    (1, 8192),
    (4, 512),
    (4, 2048),
)
DECODE_BATCHES = (1, 4, 16, 32, 64, 128, 256)
DECODE_CONTEXTS = (128, 1024, 4096, 16384)
# a continuous-batching step: a chunk (tokens, cached prefix) beside decodes (sequences, each at 1,024 cached)
MIXED_CHUNKS = ((256, 0), (512, 0), (2048, 0), (256, 2048), (512, 2048), (2048, 2048))
MIXED_DECODES = (8, 64)
MIXED_DECODE_CONTEXT = 1024
MODELS = ("llama-3.1-8b", "qwen2.5-7b", "qwen2.5-32b")
# where a row was measured, the first columns of both files (as harness.gpu_truth.rows reads them)
WHERE_COLUMNS = ("id", "source", "origin", "hardware", "model", "tp")
COLUMNS = (
    *WHERE_COLUMNS,
    "batch",
    "repeats",
    "phase",
    "tokens",
    "context",
    "ms",
    "ms_min",
    "ms_max",
)
MIXED_COLUMNS = (
    *WHERE_COLUMNS,
    "tokens",
    "context",
    "batch",
    "decode_context",
    "repeats",
    "ms",
    "ms_min",
    "ms_max",
)
# the files a probe writes into its folder: the truth files of harness.gpu_truth.rows, and the records beside them
STEPS, MIXED, EAGER, META = (
    "batchmark-steps.csv",
    "batchmark-mixed.csv",
    "batchmark-steps-eager.csv",
    "batchmark-probe.json",
)


@dataclass(frozen=True)
class Shape:
    phase: str  # prefill, decode or mixed
    batch: int  # sequences (prefill, decode) or the decodes beside the chunk (mixed)
    tokens: int  # per sequence: the prompt (prefill), 1 (decode), the chunk (mixed)
    context: int  # decode: cached tokens per sequence before the step; mixed: the chunk's cached prefix
    decode_context: int = 0  # mixed: each decode's cached tokens

    @property
    def cache_tokens(self) -> int:
        if self.phase == "mixed":
            return self.context + self.tokens + self.batch * (self.decode_context + 1)
        return self.batch * (self.tokens if self.phase == "prefill" else self.context + 1)

    @property
    def ident(self) -> str:
        tail = f"-d{self.decode_context}" if self.phase == "mixed" else ""
        return f"{self.phase}-b{self.batch}-n{self.tokens}-c{self.context}{tail}"


def plan(kv_bytes_per_token: int, kv_budget_gb: float, quick: bool = False) -> list[Shape]:
    """Every shape to time, in order; those whose cache exceeds the budget are left out (said in SOURCE.md)."""
    prefill = [Shape("prefill", b, n, 0) for b, n in (PREFILL[:3] if quick else PREFILL)]
    batches, contexts = (DECODE_BATCHES[:2], DECODE_CONTEXTS[:1]) if quick else (DECODE_BATCHES, DECODE_CONTEXTS)
    decode = [Shape("decode", b, 1, c) for c in contexts for b in batches]
    chunks, beside = (MIXED_CHUNKS[:1], MIXED_DECODES[:1]) if quick else (MIXED_CHUNKS, MIXED_DECODES)
    mixed = [Shape("mixed", b, n, c, MIXED_DECODE_CONTEXT) for n, c in chunks for b in beside]
    budget = kv_budget_gb * 1e9
    return [s for s in prefill + decode + mixed if s.cache_tokens * kv_bytes_per_token <= budget]


def _timer(device, repeats: int) -> Callable[[Callable[[], object], bool], list[float]]:
    import torch

    def on_cuda(step: Callable[[], object], graph: bool) -> list[float]:
        t0 = time.perf_counter()
        step()  # the first call picks kernels (cuBLAS heuristics, flash attention's)
        torch.cuda.synchronize()
        # long steps get fewer replays (at least 5): about two seconds of replays per shape
        n = max(5, min(repeats, int(2.0 / max(time.perf_counter() - t0, 1e-6))))
        run = step
        if graph:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                step()
            torch.cuda.current_stream().wait_stream(side)
            captured = torch.cuda.CUDAGraph()
            with torch.cuda.graph(captured):
                step()
            run = captured.replay
        for _ in range(3):
            run()
        times = []
        for _ in range(n):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return times

    def on_cpu(step: Callable[[], object], graph: bool) -> list[float]:
        step()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
        return times

    return on_cuda if device.type == "cuda" else on_cpu


def measure(
    model: str, device_name: str, hardware: str, kv_budget_gb: float, repeats: int, eager: bool, quick: bool
) -> Iterator[tuple[str, dict[str, object]]]:
    """(file, row) per shape and timing, as they are measured: file is STEPS, MIXED or EAGER."""
    import torch

    from harness.gpu_truth.decoder import Decoder
    from harness.gpu_truth.rows import model_shape

    device = torch.device(device_name)
    cuda = device.type == "cuda"
    shape = model_shape(model)
    decoder = Decoder(shape, device, torch.bfloat16 if cuda else torch.float32)
    timer = _timer(device, repeats)
    with torch.inference_mode():
        for s in plan(shape.kv_bytes_per_token(), kv_budget_gb, quick):
            step = _step(decoder, s)
            modes = ("graph", "eager") if eager and cuda and s.phase != "mixed" else ("graph" if cuda else "eager",)
            for mode in modes:
                try:
                    times = timer(step, mode == "graph")
                except RuntimeError as e:  # a kernel this GPU or torch lacks for one shape: said, and the rest run
                    print(f"{shape.name} {s.ident} {mode}: not measured: {str(e).splitlines()[0]}", file=sys.stderr)
                    continue
                row = _row(shape.name, hardware, s, mode, times)
                yield (EAGER if cuda and mode == "eager" else MIXED if s.phase == "mixed" else STEPS), row
            del step
            if cuda:
                torch.cuda.empty_cache()


def _step(decoder, s: Shape) -> Callable[[], object]:
    """The shape's step on its own inputs and filled caches (made once: a CUDA graph replays them)."""
    import torch

    def ids(*dims: int) -> torch.Tensor:
        return torch.randint(0, decoder.shape.vocab, dims, device=decoder.device)

    if s.phase == "prefill":
        prompts, cache = ids(s.batch, s.tokens), decoder.kv_cache(s.batch, s.tokens)
        return lambda: decoder.prefill(prompts, cache)
    if s.phase == "decode":
        tokens, cache = ids(s.batch), decoder.kv_cache(s.batch, s.context + 1)
        return lambda: decoder.decode(tokens, cache)
    chunk, chunk_cache = ids(s.tokens), decoder.kv_cache(1, s.context + s.tokens)
    tokens, cache = ids(s.batch), decoder.kv_cache(s.batch, s.decode_context + 1)
    return lambda: decoder.mixed(chunk, chunk_cache, tokens, cache)


def _row(model: str, hardware: str, s: Shape, mode: str, times: list[float]) -> dict[str, object]:
    row = {
        "id": f"{hardware}-{model}-{s.ident}-{mode}",
        "source": f"batchmark-{mode}",
        "origin": "measured",
        "hardware": hardware,
        "model": model,
        "tp": 1,
        "batch": s.batch,
        "repeats": len(times),
        "tokens": s.tokens,
        "context": s.context,
        "ms": round(statistics.median(times), 4),
        "ms_min": round(min(times), 4),
        "ms_max": round(max(times), 4),
    }
    return {**row, "decode_context": s.decode_context} if s.phase == "mixed" else {**row, "phase": s.phase}


def hardware_name(device_name: str) -> str:
    """`h200` for an NVIDIA H200, `cpu` on a CPU: the accelerator names of engines/sim/hardware.py."""
    import torch

    if not device_name.startswith("cuda"):
        return "cpu"
    full = torch.cuda.get_device_name(torch.device(device_name)).lower()
    return next((n for n in ("h200", "h100", "a100", "l40s", "b200") if n in full), full.replace(" ", "-"))


def achieved_peaks() -> dict[str, object]:
    """What this GPU reaches here, to set beside the datasheet peaks of engines/sim/hardware.py: 8192^3 matrix
    products in bf16, fp8 (e4m3, tensor-wise scales) and int8 (TFLOP/s or TOP/s), and a 4 GiB copy (TB/s, read
    plus write). A precision torch cannot run here is recorded with its error, not left out."""
    import torch

    n = 8192
    timer = _timer(torch.device("cuda"), 10)
    out: dict[str, object] = {}

    def rate(name: str, make: Callable[[], Callable[[], object]]) -> None:
        try:
            out[name] = round(2 * n**3 / statistics.median(timer(make(), False)) / 1e9, 1)
        except (RuntimeError, TypeError, AttributeError) as e:  # an op this torch or GPU lacks
            out[name] = f"n/a: {type(e).__name__}: {str(e).splitlines()[0][:160]}"

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    rate("bf16_matmul_tflops", lambda: lambda: a @ a)

    def fp8() -> Callable[[], object]:
        x, w = a.to(torch.float8_e4m3fn), a.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        return lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    def int8() -> Callable[[], object]:
        x = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8)
        w = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8)
        return lambda: torch._int_mm(x, w.t())

    rate("fp8_matmul_tflops", fp8)
    rate("int8_matmul_tops", int8)
    src = torch.empty(1 << 31, device="cuda", dtype=torch.int16)
    dst = torch.empty_like(src)
    out["copy_tb_per_s"] = round(2 * src.numel() * 2 / statistics.median(timer(lambda: dst.copy_(src), False)) / 1e9, 3)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        default=[],
        help=f"a config name or path (repeatable; default: {', '.join(MODELS)})",
    )
    parser.add_argument("--device", default="cuda", help="torch device (default cuda; cpu for a quick check)")
    parser.add_argument("--hardware", default=None, help="accelerator name in the rows (default: from the device)")
    parser.add_argument("--kv-budget-gb", type=float, default=40.0, help="largest KV cache a shape may use")
    parser.add_argument("--repeats", type=int, default=20, help="timed replays per shape (median kept)")
    parser.add_argument("--eager", action="store_true", help="also time each step launched op by op")
    parser.add_argument("--quick", action="store_true", help="three prefills and two decodes (a smoke check)")
    parser.add_argument(
        "-o",
        "--out",
        type=Path,
        required=True,
        help=f"folder to write {STEPS}, {MIXED} (truth rows), {EAGER} and {META} into",
    )


def run(args: argparse.Namespace) -> int:
    import torch

    from harness.errors import HarnessInputError
    from harness.gpu_truth.rows import model_shape

    if args.repeats < 1 or not args.kv_budget_gb > 0:
        raise HarnessInputError("sim probe: --repeats and --kv-budget-gb must be positive")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise HarnessInputError(f"sim probe: --device {args.device}: torch sees no CUDA GPU here (--device cpu?)")
    if args.out.exists() and not args.out.is_dir():
        raise HarnessInputError(f"sim probe: -o {args.out}: not a folder (the probe writes {STEPS} and more into one)")
    models = args.models or list(MODELS)
    for model in models:
        model_shape(model)  # an unknown model is one line before anything is measured
    hardware = args.hardware or hardware_name(args.device)
    meta = {
        "device": args.device,
        "hardware": hardware,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor(),
        "models": models,
        "repeats": args.repeats,
        "kv_budget_gb": args.kv_budget_gb,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "argv": sys.argv,
    }
    if args.device.startswith("cuda"):
        meta["achieved"] = achieved_peaks()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    names = (STEPS, MIXED, EAGER) if args.eager and args.device.startswith("cuda") else (STEPS, MIXED)
    with ExitStack() as stack:
        files = {n: stack.enter_context((args.out / n).open("w", newline="", encoding="utf-8")) for n in names}
        writers = {
            n: csv.DictWriter(f, fieldnames=MIXED_COLUMNS if n == MIXED else COLUMNS, lineterminator="\n")
            for n, f in files.items()
        }
        for writer in writers.values():
            writer.writeheader()
        for model in models:
            for name, row in measure(
                model, args.device, hardware, args.kv_budget_gb, args.repeats, args.eager, args.quick
            ):
                writers[name].writerow(row)
                files[name].flush()  # a run stopped early keeps every row it measured
                print(f"{row['id']}: {row['ms']} ms", flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m harness.gpu_truth.probe", description=__doc__.split("\n")[0])
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
