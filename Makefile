# `make test` is the one test command (README, .ci/run): it builds its own virtualenv from
# pyproject.toml on first use, then runs every quality gate and the test suite.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
SRC := src tests bench scripts

.PHONY: test lint typecheck layers unit unit310 wheel golden browser bench bench-sim bench-world bench-disruption bench-day bench-optimal bench-sweep bench-ray fuzz clean

test: browser lint typecheck layers unit unit310 wheel golden

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

lint: $(BIN)/.installed
	$(BIN)/ruff check $(SRC)
	$(BIN)/ruff format --check $(SRC)

typecheck: $(BIN)/.installed
	$(BIN)/mypy

layers: $(BIN)/.installed
	$(BIN)/lint-imports

unit: $(BIN)/.installed
	$(BIN)/pytest

# Python 3.10, the oldest supported (Ubuntu 22.04's default; issue 23): the unit suite again in
# a second virtualenv with the test extras (the gates above already hold the code to 3.10: ruff's
# target-version, mypy's python_version). The first `python3.10` on PATH that runs, else pyenv's;
# skipped with a message when there is none. PYTHON310=/path/to/python3.10 to choose one.
VENV310 ?= .venv310
PYTHON310 ?= $(firstword $(foreach p,$(shell command -v python3.10) \
	$(wildcard $(HOME)/.pyenv/versions/3.10*/bin/python /root/.pyenv/versions/3.10*/bin/python), \
	$(if $(shell '$(p)' -c 'import sys; print(sys.version_info[:2] == (3, 10))' 2>/dev/null \
	| grep -x True),$(p))))
python310 := $(PYTHON310)
unit310:
ifeq ($(python310),)
	@echo "unit310: skipped: no Python 3.10 found (python3.10 on PATH, ~/.pyenv/versions/3.10*)"
else
	@echo "unit310: $(python310)"
	$(MAKE) --no-print-directory $(VENV310)/bin/.installed PYTHON310='$(python310)'
	$(VENV310)/bin/pytest
endif

$(VENV310)/bin/.installed: pyproject.toml
	'$(python310)' -m venv $(VENV310)
	$(VENV310)/bin/python -m pip install -q --upgrade pip
	$(VENV310)/bin/python -m pip install -q -e '.[test]'
	touch $@

# Every recorded output (plan, explain, validate, lint, simulate and its events) byte-identical to
# the fingerprint committed with the code (scripts/golden.py; issue 22).
golden: $(BIN)/.installed
	$(BIN)/python scripts/golden.py check tests/golden/outputs.sha256

# A real (non-editable) wheel must carry the package data `gpucap demo` needs.
wheel: $(BIN)/.installed
	$(BIN)/python scripts/check_wheel.py

# The system Chromium the report's browser tests drive (Playwright with executable_path; never a
# downloaded browser). Installed with apt-get when missing and we are root (CI, .ci/run);
# elsewhere say how, and the browser tests skip with that reason (they fail when CI=true).
browser:
	@if command -v chromium >/dev/null 2>&1; then \
		echo "browser: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && \
		echo "browser: installed $$(command -v chromium)"; \
	else \
		echo "browser: no chromium (Debian: sudo apt-get install -y chromium); the browser tests will skip"; \
	fi

# The scheduler in-process (bench/run.py), then `gpucap plan` end to end on Karpenter's benchmark
# workload through the installed command, stage by stage (bench/plan.py; exit 1 if a stage's
# cost per pod grows with the input). PLAN_SIZES=1000,10000 for a shorter run.
PLAN_SIZES ?= 1000,10000,50000
bench: $(BIN)/.installed
	$(BIN)/python bench/run.py
	$(BIN)/python bench/plan.py --sizes $(PLAN_SIZES)

# The simulator's 24-hour benchmark (issue 10): stage times, events, provisioning passes.
bench-sim: $(BIN)/.installed
	$(BIN)/python bench/simulate.py --repeat 3

# The stochastic world (issue 25): the demo's day under the spot market and the HPA, one run and
# `--runs 100`, in-process and through the installed command.
bench-world: $(BIN)/.installed
	$(BIN)/python bench/world.py --runs 100

bench-disruption: $(BIN)/.installed
	$(BIN)/python bench/disruption_scale.py

# Issue 25's day: 1,000 one-GPU nodes at the afternoon peak, 500 at night, for 24 hours with
# consolidation (target under 10 s), through `gpucap simulate` and in-process.
bench-day: $(BIN)/.installed
	$(BIN)/python bench/disruption_scale.py --sizes 1000 --hours 24 --shape diurnal --expire-after default --target 10

# `plan --optimal` on 1,000 GPU pods over the bundled catalog (issue 27): optimum within 3 % of
# the floor in under 10 s, the floor alone under 2 s (exit 1 if missed).
bench-optimal: $(BIN)/.installed
	$(BIN)/python bench/optimal.py

# `gpucap sweep` (issue 26): variants x seeds of the workshop fleet's day on the local process
# pool (1,000 runs by default; SWEEP_VARIANTS=5 for 100), runs/s and peak memory per worker.
SWEEP_VARIANTS ?= 50
SWEEP_SEEDS ?= 20
bench-sweep: $(BIN)/.installed
	$(BIN)/python bench/sweep.py --variants $(SWEEP_VARIANTS) --seeds $(SWEEP_SEEDS)

# The Ray engine against the local pool (issue 26): the same 40 runs of the demo's act-3 day on
# local processes and on a local Ray with the same CPUs; wall times, Ray's start-up and the
# work's pickled size, memory per worker (bench/ray_engine.py; exit 1 if the outcomes differ).
bench-ray: $(BIN)/.installed
	$(BIN)/python bench/ray_engine.py --runs 40

# The long fuzz run (tests/fuzz/ runs a fixed minute of it in CI): `make fuzz MINUTES=20 SEED=9`.
MINUTES ?= 20
SEED ?= 9
fuzz: $(BIN)/.installed
	$(BIN)/python bench/fuzz.py --minutes $(MINUTES) --seed $(SEED)

clean:
	rm -rf $(VENV) $(VENV310) dist build .mypy_cache .ruff_cache .pytest_cache .hypothesis
