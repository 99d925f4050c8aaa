# fgk top-level Makefile.  See README.md and docs/building.md.
#
#   make deps      install the Debian packages the project needs
#   make kernel    extract + patch + configure + build the kernel (build/kernel/)
#                  KVARIANT=name builds build/kernel-name/ with
#                  qemu-profiles/kernel-name.config merged last
#   make tools     build layout-tools/ (when it exists)
#   make demo      boot a randomly laid out kernel and show its layout
#   make check-unit  C unit tests + pure-Python tests: no kernel build, seconds
#   make check     run every test (the unit tier first)
#   make check-debian  build Debian's config (KVARIANT=debian, ~35 min) and
#                  run every test against it, plus tests/test_debian.py
#   make bench     run the benchmark scripts under bench/
#   make fuzz      every libFuzzer harness, FUZZ_SECONDS in all (docs/fuzzing.md)
#   SANITIZE=1     check/check-unit: the C tests and fgk built with ASan+UBSan
#                  (build/sanitize/); tests/test_hostile.py runs that fgk

SHELL := /bin/bash
# Debian's interpreter: python3-pytest and python3-drgn install into it.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PYTEST_ARGS ?=
KVARIANT ?=
export KVARIANT PYTHON

DEPS_STAMP := build/.deps

.PHONY: all deps kernel tools demo check check-unit check-debian bench clean distclean help fuzz
.DEFAULT_GOAL := help

help:
	@sed -n '3,17p' Makefile | sed 's/^# \{0,1\}//'

all: kernel tools

# `make deps` always checks (fast: dpkg-query only); other targets check once
# per change of the package list (the stamp depends on scripts/deps).
deps:
	@scripts/deps
	@mkdir -p build && touch $(DEPS_STAMP)

$(DEPS_STAMP): scripts/deps
	@scripts/deps
	@mkdir -p build && touch $@

kernel: $(DEPS_STAMP)
	@scripts/build-kernel

tools: $(DEPS_STAMP)
	@if [ -f layout-tools/Makefile ]; then $(MAKE) -C layout-tools; \
	else echo "make tools: layout-tools/Makefile not present yet, nothing to build"; fi

demo: kernel tools
	@scripts/demo

# The unit tier: libfgk's Check tests and reference comparison, the libfgk
# binding, the seed corpus against every entry point, help vs man pages,
# fgk-gdb's core, hostile inputs, the modes of files that hold a seed, and
# the built fgk_test.ko's layout and frames (skipped before make kernel).
UNIT_TESTS := tests/test_libfgk.py tests/test_seed_corpus.py tests/test_help.py fgk-gdb/tests \
	tests/test_hostile.py tests/test_file_modes.py tests/test_modules.py tests/test_json.py
# SANITIZE=1: the C tests run on an ASan+UBSan build (layout-tools/Makefile),
# and tests/test_hostile.py runs the sanitized fgk (build/sanitize/bin/fgk)
ifeq ($(SANITIZE),1)
export FGK_BIN := $(CURDIR)/build/sanitize/bin/fgk
endif
check-unit: $(DEPS_STAMP) tools
	$(if $(filter 1,$(SANITIZE)),$(MAKE) -C layout-tools SANITIZE=0 all)
	$(MAKE) -C layout-tools check
	$(PYTHON) -m pytest -p no:cacheprovider -c tests/pytest.ini \
		-k 'not test_qemu_runner_cli' $(PYTEST_ARGS) $(UNIT_TESTS)

# the unit tier first: a broken parser fails before a kernel build
check: $(DEPS_STAMP) check-unit
	$(MAKE) kernel tools
	$(PYTHON) -m pytest -p no:cacheprovider -v $(PYTEST_ARGS) tests/

# The whole suite on Debian's own configuration (docs/debian-kernel.md):
# KVARIANT=debian points the runner, the tests and their skips at
# build/kernel-debian.  `make check` runs tests/test_debian.py where that
# build exists and skips it, saying why, where it does not.
check-debian: $(DEPS_STAMP)
	$(MAKE) check KVARIANT=debian

# libFuzzer harnesses of every untrusted-input parser, one at a time
FUZZ_SECONDS ?= 240
fuzz: $(DEPS_STAMP)
	$(MAKE) -C layout-tools fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

bench: kernel tools
	@scripts/bench

clean:
	rm -rf build/runs build/initramfs

distclean:
	rm -rf build
