# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.batchmark-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test bench lint install clean

install: $(STAMP)

# torch goes first, pinned: on this machine `pip install torch==2.13.0` takes the CPU wheel, and the
# project's own pin is then already satisfied, so nothing pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/batchmark demo

# Two workers: CI has two cores and the suite is CPU-bound (measured: 363 s against 608 s serial). Benchmarks
# (`make bench`) stay serial: they measure speed, and a second worker would be their neighbour.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) -m pytest -q -s -m bench --benchmark-enable tests

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
