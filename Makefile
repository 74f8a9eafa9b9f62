# Two commands on a fresh machine:
#   make demo   install missing Debian packages, configure, build, run the default scenarios
#               (Llama-2 7B FSDP weak scaling; AllGather and AllReduce on DGX H100 + IB NDR)
#   make test   the same set-up, then every test (GPU tests skip themselves without a GPU)
#   make docs   regenerate docs/figures/ and every command output quoted in README.md and docs/
# For developers (clang, docs/fuzzing.md), in a second build folder instrumented with ASan + UBSan:
#   make sanitize  every test but the GPU ones (SANITIZE_LABELS=unit: the unit tests only, as CI
#                  runs it); fails on any sanitizer report
#   make fuzz      the readers' libFuzzer targets, FUZZ_SECONDS each; fails on any crash
BUILD ?= build
JOBS ?= $(shell nproc)
DEBS := cmake g++ make pkg-config libsimgrid-dev libtomlplusplus-dev libboost-dev \
        libcli11-dev libfmt-dev libgtest-dev nlohmann-json3-dev libgsl-dev gnuplot-nox zlib1g-dev libjemalloc-dev \
        slurm-wlm munge
DEMO_SCENARIO := scenarios/examples/dgx-h100-ib-ndr.toml
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := scenario nccl_tests_log kineto_trace csv_table cli_sets
FUZZ_DEBS := clang libclang-rt-14-dev
SANITIZE_LABELS ?=
# Test names `make sanitize` leaves out, a regular expression of alternatives joined by | (no $:
# make would read it; empty: none; .ci/run names its own).
SANITIZE_SKIP ?=
# Sanitizer reports go to files (SimGrid's stack switching makes ASan print a warning that would
# land in the output the CLI tests compare); a report of an error in any of them fails the run.
SANITIZER_REPORT := ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:

.PHONY: all deps configure build demo test docs bench clean fuzz-deps fuzz-configure fuzz sanitize

all: build

deps:
	@missing=""; for p in $(DEBS) $(EXTRA_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages; run:"; echo "  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

# Optimized, with line tables only (-g1): backtraces, sanitizer reports and profilers keep file
# and line; full debug info made the build 1.4x longer (a sample of six files: 75 s to 56 s).
# Configure a build of your own with -DCMAKE_BUILD_TYPE=Debug to step through variables.
BUILD_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
# The sanitized build at -O1, as AddressSanitizer's documentation advises: 16% less to compile than
# -O2 with full debug info (the same six files); reports keep their file and line.
SANITIZED_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"

configure: deps
	cmake -S . -B $(BUILD) $(BUILD_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/commbound run scenarios/paper/weak_scaling_7b.toml
	$(BUILD)/bin/commbound platform $(DEMO_SCENARIO)
	$(BUILD)/bin/commbound collective $(DEMO_SCENARIO) --op allgather --nodes 1:256 --bytes 1G
	$(BUILD)/bin/commbound collective $(DEMO_SCENARIO) --op allreduce --nodes 1:256 --bytes 1G

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The figures of docs/figures/ and the command outputs quoted in README.md and docs/, regenerated
# from the commands that make them (docs/developing.md).
docs: build
	docs/figures/update.sh $(BUILD) all
	docs/generated.sh $(BUILD)

bench: build
	$(BUILD)/bin/bench_collectives
	$(BUILD)/bin/bench_training
	$(BUILD)/bin/bench_search
	$(BUILD)/bin/bench_innode
	$(BUILD)/bin/bench_cluster
	@if [ -x $(BUILD)/bin/bench_kernels ]; then $(BUILD)/bin/bench_kernels; $(BUILD)/bin/bench_attention; fi

fuzz-deps:
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(FUZZ_DEBS)"

fuzz-configure: fuzz-deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(SANITIZED_FLAGS) -DCOMMBOUND_CUDA=OFF -DCOMMBOUND_FUZZ=ON

# Each target runs over its seed corpus (tests/fuzz/corpus/<reader>/), then mutates for
# FUZZ_SECONDS, JOBS targets side by side (tests/fuzz/run_targets.sh); a crash leaves its input and
# the sanitizer's report in $(FUZZ_BUILD)/fuzz/<reader>/reports/.
fuzz: fuzz-configure
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	tests/fuzz/run_targets.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(JOBS) $(FUZZ_TARGETS)

sanitize: fuzz-configure
	cmake --build $(FUZZ_BUILD) -j $(JOBS) $(if $(SANITIZE_LABELS),--target tests_$(SANITIZE_LABELS))
	@reports=$(abspath $(FUZZ_BUILD))/sanitizer; rm -rf $$reports; mkdir -p $$reports; \
	cd $(FUZZ_BUILD) && ASAN_OPTIONS=log_path=$$reports/asan UBSAN_OPTIONS=log_path=$$reports/ubsan:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE gpu $(if $(SANITIZE_LABELS),-L $(SANITIZE_LABELS)) \
	    $(if $(SANITIZE_SKIP),-E '$(SANITIZE_SKIP)'); status=$$?; \
	if grep -l "$(SANITIZER_REPORT)" $$reports/* 2>/dev/null; then \
	  echo "sanitizer reports above (first of them):"; grep -l "$(SANITIZER_REPORT)" $$reports/* | head -n 1 | xargs head -n 60; exit 1; \
	fi; exit $$status

clean:
	rm -rf $(BUILD)
