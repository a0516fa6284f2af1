"""Native CPU kernels, compiled on first use with the system C compiler and cached by source hash.

Only the paged-attention kernel lives here. When no compiler is available the model runner falls back
to a pure-torch gather + SDPA path (same results, several times slower); `kernel_info()` says which
one a run used so the manifest records it. `zeros_on_huge_pages` allocates the KV pool. Imports: the
standard library only (ctypes; torch lazily, when a kernel or a tensor is asked for).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

_SOURCE = Path(__file__).with_name("paged_attention.c")
_lib: ctypes.CDLL | None = None
_status: str = "not loaded"


def cache_root() -> Path:
    """batchmark's cache on this machine: $BATCHMARK_CACHE, else $XDG_CACHE_HOME/batchmark (~/.cache/batchmark)."""
    base = os.environ.get("BATCHMARK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "batchmark"
    )
    return Path(base)


def _cache_dir() -> Path:
    return cache_root() / "kernels"


def _compile(target: Path) -> None:
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler found")
    target.parent.mkdir(parents=True, exist_ok=True)
    # -fopenmp links libgomp.so.1, which torch has already loaded: both share one thread pool.
    flags = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99"]
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
        tmp_path = Path(tmp.name)
    try:
        subprocess.run(
            [compiler, *flags, str(_SOURCE), "-o", str(tmp_path), "-lm"],
            check=True,
            capture_output=True,
            text=True,
        )
        tmp_path.replace(target)  # atomic: concurrent test workers never load a half-written file
    finally:
        tmp_path.unlink(missing_ok=True)


def load_paged_attention() -> ctypes.CDLL | None:
    """The compiled kernel library, or None when it cannot be built here (the caller falls back)."""
    global _lib, _status
    if _lib is not None or _status.startswith("unavailable"):
        return _lib
    if os.environ.get("BATCHMARK_NO_NATIVE"):
        _status = "unavailable: disabled by BATCHMARK_NO_NATIVE"
        return None
    import torch  # noqa: F401  load torch's libgomp first so the kernel reuses it

    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:16]
    target = _cache_dir() / f"paged_attention-{digest}.so"
    try:
        if not target.exists():
            _compile(target)
        lib = ctypes.CDLL(str(target))
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        _status = f"unavailable: {detail.strip().splitlines()[0] if detail.strip() else type(exc).__name__}"
        return None
    p, i32 = ctypes.c_void_p, ctypes.c_int32
    lib.paged_attention.argtypes = [p, p, p, p, i32, p, p, p, i32, i32, i32, i32, i32, ctypes.c_float, i32]
    lib.paged_attention.restype = ctypes.c_int
    _lib, _status = lib, f"native ({target.name})"
    return lib


_MADV_HUGEPAGE = 14  # linux/mman.h
_HUGE_PAGE = 2 << 20


def zeros_on_huge_pages(shape: tuple[int, ...], dtype: Any) -> Any:
    """A zeroed tensor whose memory asks Linux for 2 MiB transparent huge pages before it is touched.

    Decode attention walks scattered KV blocks; on 4 KiB pages a 32 MiB working set misses the TLB at
    almost every block. Machines whose THP setting is "madvise" (the common default) only give huge
    pages to memory that asks; elsewhere the advice is ignored and the tensor is an ordinary one.
    """
    import torch

    tensor = torch.empty(shape, dtype=dtype)
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes >= 2 * _HUGE_PAGE and os.uname().sysname == "Linux":
        start = -(-tensor.data_ptr() // _HUGE_PAGE) * _HUGE_PAGE
        length = (tensor.data_ptr() + nbytes - start) // _HUGE_PAGE * _HUGE_PAGE
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _MADV_HUGEPAGE)
        except (OSError, AttributeError):
            pass  # advice only
    return tensor.zero_()


def kernel_info() -> str:
    load_paged_attention()
    return _status
