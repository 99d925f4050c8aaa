# fgk top-level Makefile.  See README.md and docs/building.md.
#
#   make deps      install the Debian packages the project needs
#   make kernel    extract + patch + configure + build the kernel (build/kernel/)
#                  KVARIANT=name builds build/kernel-name/ with
#                  qemu-profiles/kernel-name.config merged last
#   make tools     build layout-tools/ (when it exists)
#   make demo      boot a randomly laid out kernel and show its layout
#   make check     run every test
#   make bench     run the benchmark scripts under bench/

SHELL := /bin/bash
# Debian's interpreter: python3-pytest and python3-drgn install into it.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PYTEST_ARGS ?=
KVARIANT ?=
export KVARIANT PYTHON

DEPS_STAMP := build/.deps

.PHONY: all deps kernel tools demo check bench clean distclean help
.DEFAULT_GOAL := help

help:
	@sed -n '3,11p' Makefile | sed 's/^# \{0,1\}//'

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

check: $(DEPS_STAMP) kernel tools
	$(PYTHON) -m pytest -p no:cacheprovider -v $(PYTEST_ARGS) tests/

bench: kernel tools
	@scripts/bench

clean:
	rm -rf build/runs build/initramfs

distclean:
	rm -rf build
