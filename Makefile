# Thin wrapper over CMake. `make sweep`: the main job; `make test`: build and every test.
BUILD ?= build
JOBS ?= $(shell nproc)
SPEC ?= sweeps/default.json
# Unity build (CMakeLists.txt: CONVTUNE_UNITY) where there are few cores; many cores build more files at once.
UNITY ?= $(shell [ $(JOBS) -le 8 ] && echo ON || echo OFF)
export PATH := $(PATH):/usr/local/cuda/bin

.PHONY: all build deps test test-gpu test-slurm sweep quick plots mutate clean

all: build

deps:
	@bash scripts/deps.sh test

build:
	@bash scripts/deps.sh build
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVTUNE_UNITY=$(UNITY) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# CPU tests always; GPU tests skip with a message when there is no GPU; Python tests of the plots.
test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L cpu
	@# The GPU suite once: its summary lines here, the whole log in $(BUILD)/gpu_tests.log.
	cd $(BUILD) && { ctest --output-on-failure -L gpu -V > gpu_tests.log 2>&1; rc=$$?; \
	  grep -E "no CUDA GPU|SKIPPED|PASSED|FAILED|tests? from|Test +#|Passed|Failed" gpu_tests.log || true; exit $$rc; }
	python3 -m pytest -q tests/python $$(python3 -c "import xdist" 2>/dev/null && echo "-n $(JOBS)")

# The Slurm plumbing on a one-node cluster started here (root; installs slurm-wlm and munge if missing).
test-slurm: build
	bash scripts/slurm/test_cluster.sh sweeps/default.json 3

test-gpu: build
	cd $(BUILD) && ./tests/convtune_gpu_tests

sweep: build
	$(BUILD)/convtune sweep $(SPEC) --plot

quick: build
	$(BUILD)/convtune sweep sweeps/quick.json

# Plots and a report from the newest run folder under results/ (by the date and time in its name; works
# without a GPU).
plots:
	@run=$$(ls -d results/*/*/ 2>/dev/null | awk -F- '{print $$(NF-1)$$NF" "$$0}' | sort | tail -1 | cut -d' ' -f2); \
	if [ -z "$$run" ]; then echo "no run folder under results/"; exit 1; fi; \
	bash scripts/deps.sh test && python3 scripts/plot.py "$$run"

# Mutation testing of the rule files (slow: not in CI): plan a seeded sample of one-line mutants, try them in
# parallel workers, report the score and the survivors (scripts/mutate.py; the last report: docs/MUTATION.md).
# MUTATE="--files harness/select.cpp --sample 0" to choose; `python3 scripts/mutate.py plots` for the plot scripts.
MUTATE ?=
mutate:
	python3 scripts/mutate.py all $(MUTATE)

clean:
	rm -rf $(BUILD)
