# Two commands on a fresh machine:
#   make demo   install missing Debian packages, configure, build, run the default scenarios
#               (Llama-2 7B FSDP weak scaling; AllGather and AllReduce on DGX H100 + IB NDR)
#   make test   the same set-up, then every test (GPU tests skip themselves without a GPU)
BUILD ?= build
JOBS ?= $(shell nproc)
DEBS := cmake g++ make pkg-config libsimgrid-dev libtomlplusplus-dev libboost-dev \
        libcli11-dev libfmt-dev libgtest-dev nlohmann-json3-dev libgsl-dev gnuplot-nox zlib1g-dev \
        slurm-wlm munge
DEMO_SCENARIO := scenarios/examples/dgx-h100-ib-ndr.toml

.PHONY: all deps configure build demo test bench clean

all: build

deps:
	@missing=""; for p in $(DEBS); do \
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

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/commbound run scenarios/paper/weak_scaling_7b.toml
	$(BUILD)/bin/commbound platform $(DEMO_SCENARIO)
	$(BUILD)/bin/commbound collective $(DEMO_SCENARIO) --op allgather --nodes 1:256 --bytes 1G
	$(BUILD)/bin/commbound collective $(DEMO_SCENARIO) --op allreduce --nodes 1:256 --bytes 1G

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/bin/bench_collectives
	$(BUILD)/bin/bench_training
	$(BUILD)/bin/bench_search
	$(BUILD)/bin/bench_innode
	@if [ -x $(BUILD)/bin/bench_kernels ]; then $(BUILD)/bin/bench_kernels; $(BUILD)/bin/bench_attention; fi

clean:
	rm -rf $(BUILD)
