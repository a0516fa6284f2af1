# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.batchmark-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Packages are installed without byte-compiling them (torch alone is thousands of modules, few of them ever
# imported: 24.7 s against 7.9 s measured for torch, 75 s against 41 s for the rest); Python compiles what
# is imported on first use and keeps it, so an environment that forbids writing bytecode is overridden here.
# Outside make, a shell that sets PYTHONDONTWRITEBYTECODE would compile every module on every run (a simulated
# run imports 1,246), so what batchmark imports is compiled once at install by importing it
# (harness/warm_bytecode.py; compiling all of .venv/lib took 43.5 s, most of it modules never imported).
unexport PYTHONDONTWRITEBYTECODE
PIP := $(PY) -m pip install -q --disable-pip-version-check --no-compile
# The project's own dependencies go through uv, which installs the same versions as pip (`pip freeze` of the
# two environments identical) in 5 s against pip's 61 s with both caches warm, 43 s against 56 s cold.
UV  := $(VENV)/bin/uv pip install -q --python $(PY)

.PHONY: demo test bench router-bench lint install clean

install: $(STAMP)

# torch goes first, pinned, through pip: on this machine `pip install torch==2.13.0` takes the CPU wheel that
# lies on disk (uv does not look there), and the project's own pin is then already satisfied, so nothing
# pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) torch==2.13.0 uv==0.13.8
	$(UV) -e '.[dev]'
	$(PY) -m harness.warm_bytecode
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/batchmark demo

# Two workers: CI has two cores and the suite is CPU-bound (measured: 316-363 s against 608 s serial). Each
# file stays on one worker (--dist loadfile: 340 s), so a module's fixture (a local Ray cluster, a served
# engine) is built once, never twice at the same time. Benchmarks (`make bench`) stay serial: they measure
# speed, and a second worker would be their neighbour.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

bench: $(STAMP)
	$(PY) -m pytest -q -s -m bench --benchmark-enable tests

# A real router (vllm-router, the optional extra `router`) over two `batchmark serve` replicas, measured and
# judged against its simulated twin (docs/cluster.md "A real router"). The extra is installed here only.
router-bench: $(STAMP)
	$(PY) -c "import vllm_router" 2>/dev/null || $(UV) -e '.[router]'
	flock /tmp/batchmark-timing.lock bash docs/cluster/real_router.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
