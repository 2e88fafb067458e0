# The two set-up commands of the README: `make run` and `make test`.
PRESET ?= release
BUILD_DIR := build
JOBS ?= $(shell nproc)

.PHONY: deps configure build run test clean

deps:
	@scripts/install-deps

$(BUILD_DIR)/build.ninja: CMakeLists.txt CMakePresets.json | deps
	cmake --preset $(PRESET)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: every workload's baseline at the cpu size, evaluated through the harness.
run: build
	$(BUILD_DIR)/opbench run --size cpu --impl baseline --out results/latest

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 900

clean:
	rm -rf $(BUILD_DIR)
