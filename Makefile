# fgk top-level Makefile.  See README.md and docs/building.md.
#
#   make deps      install the Debian packages the project needs
#   make kernel    extract + patch + configure + build the kernel (build/kernel/)
#                  KVARIANT=name builds build/kernel-name/ with
#                  qemu-profiles/kernel-name.config merged last
#   make tools     build layout-tools/ (when it exists)
#   make demo      boot a randomly laid out kernel and show its layout
#   make perf-model  the fgk-perf QEMU plugin + its model test (docs/runtime-cost.md)
#   make check-unit  C unit tests + pure-Python tests: no kernel build, seconds
#   make check     every test: the unit tier, then the 6.1 tier and, at the
#                  same time, the 6.12 build and its k612 tier
#   make check-debian  build Debian's config (KVARIANT=debian, ~35 min) and
#                  run every test against it, plus tests/test_debian.py
#   make kernel-matrix  the 6.12 series built with clang (LLVM=1), with FRED
#                  and with SMP=n, each booted on 3 random seeds (not in make
#                  check; about an hour; docs/building.md)
#   make bench     run the benchmark scripts under bench/
#   make install   PREFIX=/usr/local DESTDIR=: fgk, libfgk, fgk.h, libfgk.pc,
#                  man pages, the Python binding, fgk-gdb (docs/building.md)
#   make uninstall remove exactly what make install installed
#   make deb       Debian packages into build/deb/ (debian/, dpkg-buildpackage)
#   make kernel-deb  linux-image (+ -dbg) packages via bindeb-pkg, build/kernel-deb/
#                  (KVARIANT=debian: build/kernel-deb-debian/); make kernel-deb-check
#                  boots them (opt-in, not in make check)
#   make fuzz      every libFuzzer harness, FUZZ_SECONDS in all (docs/fuzzing.md)
#   SANITIZE=1     check/check-unit: the C tests and fgk built with ASan+UBSan
#                  (build/sanitize/); tests/test_hostile.py runs that fgk

SHELL := /bin/bash
# Debian's interpreter: python3-pytest and python3-drgn install into it.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PYTEST_ARGS ?=
KVARIANT ?=
# KVERSION=6.12: Debian's linux-source-6.12 (kernel-series/6.12/, build/kernel-6.12*)
KVERSION ?=
export KVARIANT KVERSION PYTHON

DEPS_STAMP := build/.deps

.PHONY: all deps kernel tools demo check check-unit check-k612 check-debian bench clean distclean help fuzz \
	kernel-matrix \
	install uninstall deb kernel-deb kernel-deb-check perf-model
.DEFAULT_GOAL := help

help:
	@sed -n '3,28p' Makefile | sed 's/^# \{0,1\}//'

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

# perf-model/: the fgk-perf QEMU plugin (docs/runtime-cost.md)
perf-model: $(DEPS_STAMP)
	$(MAKE) -C perf-model all check

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

# The guest tiers: pytest -v with the slowest 40 durations, each tier with
# its own --basetemp (build/pytest-6.1, build/pytest-6.12, ...): pytest
# cleans old numbered temp dirs of other sessions, and the two tiers of
# make check run at once.  pytest empties its --basetemp when it starts.
TIER = $(or $(filter-out 6.1,$(KVERSION)),6.1)$(if $(KVARIANT),-$(KVARIANT))
PYTEST_TIER = $(PYTHON) -m pytest -p no:cacheprovider -v --durations=40
K612_LOG := build/check-k612.log

# the unit tier first: a broken parser fails before a kernel build.  Then
# the 6.1 kernel, and the whole suite on it (the 6.1 tier) in the
# foreground.  The default run does its second tier in the background at
# the same time: the 6.12 kernel build (nice 19), then the tests marked
# k612 on it (the k612 tier, what make check-k612 runs), all into
# build/check-k612.log.  The 6.1 tests mostly wait on one single-threaded
# QEMU, so the build and then the k612 tier take the other core.  At the
# end the k612 tier's whole log is printed (every test and its durations)
# and make check fails if either tier failed, saying which.  The background
# job has its own process group (set -m): an interrupted make check stops it.
check: $(DEPS_STAMP) check-unit
	$(MAKE) kernel tools
	@bg=; if [ -z "$(KVERSION)$(KVARIANT)" ]; then \
	    echo "make check: the 6.12 kernel build (nice 19), then the k612 tier, in the background (log: $(K612_LOG))"; \
	    set -m; \
	    ( nice -n 19 $(MAKE) --no-print-directory kernel KVERSION=6.12 KVARIANT= || \
	          { echo "make check: the 6.12 kernel build failed"; exit 97; }; \
	      echo "make check: the 6.12 kernel is built; the k612 tier starts"; \
	      KVERSION=6.12 KVARIANT= $(PYTEST_TIER) --basetemp=build/pytest-6.12 -m k612 $(PYTEST_ARGS) tests/ \
	    ) > $(K612_LOG) 2>&1 & bg=$$!; \
	    set +m; \
	    trap 'kill -INT -- -$$bg 2>/dev/null' EXIT; \
	    trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP; \
	fi; \
	rc=0; $(PYTEST_TIER) --basetemp=build/pytest-$(TIER) $(PYTEST_ARGS) tests/ || rc=$$?; \
	[ -n "$$bg" ] || exit $$rc; \
	echo "make check: the $(TIER) tier is done (exit $$rc); waiting for the background 6.12 build and k612 tier"; \
	bgrc=0; wait $$bg || bgrc=$$?; \
	if [ $$bgrc -eq 5 ] && [ -n "$(if $(strip $(PYTEST_ARGS)),1)" ]; then \
	    echo "make check: PYTEST_ARGS selects no k612 test (pytest exit 5): the k612 tier ran nothing"; bgrc=0; fi; \
	echo "======== make check: the k612 tier, on 6.12 ($(K612_LOG)) ========"; \
	cat $(K612_LOG); \
	echo "======== make check: end of $(K612_LOG) ========"; \
	failed=; \
	[ $$rc -eq 0 ] || failed="the $(TIER) tier (pytest exit $$rc)"; \
	if [ $$bgrc -eq 97 ]; then failed="$${failed:+$$failed; }the 6.12 kernel build (the k612 tier did not run)"; \
	elif [ $$bgrc -ne 0 ]; then failed="$${failed:+$$failed; }the k612 tier on 6.12 (pytest exit $$bgrc)"; fi; \
	if [ -n "$$failed" ]; then echo "make check: FAILED: $$failed"; exit 1; fi; \
	echo "make check: both tiers passed (6.1, and k612 on 6.12)"

# The second kernel: the tests marked k612 (tests/pytest.ini) again, on the
# 6.12 build (build/kernel-6.12); make check runs it beside the 6.1 tier.
# `make check KVERSION=6.12` runs the whole suite on it.
check-k612: $(DEPS_STAMP) tools
	$(MAKE) kernel KVERSION=6.12 KVARIANT=
	KVERSION=6.12 KVARIANT= $(PYTEST_TIER) --basetemp=build/pytest-6.12 -m k612 $(PYTEST_ARGS) tests/

# The whole suite on Debian's own configuration (docs/debian-kernel.md):
# KVARIANT=debian points the runner, the tests and their skips at
# build/kernel-debian (KVERSION=6.12: build/kernel-6.12-debian, on Debian's
# 6.12 config).  `make check` runs tests/test_debian.py where that build
# exists, check-k612 where build/kernel-6.12-debian does, and each skips it,
# saying why, where it does not.
check-debian: $(DEPS_STAMP)
	$(MAKE) check KVARIANT=debian

# The 6.12 series under the configurations a kernel reviewer tries first
# (scripts/kernel-matrix; docs/building.md, "The configuration matrix"):
# KVARIANT=clang (LLVM=1), fred (X86_FRED=y), smp-off (SMP=n), built one
# after the other in one tree (build/linux-6.12-matrix) and each booted on
# 3 random seeds (KUnit fgkaslr, /proc/kallsyms = fgk map).  MATRIX="..."
# picks variants.  Not part of make check: three full kernel builds.
kernel-matrix: $(DEPS_STAMP) tools
	@scripts/kernel-matrix

# libFuzzer harnesses of every untrusted-input parser, one at a time
FUZZ_SECONDS ?= 240
fuzz: $(DEPS_STAMP)
	$(MAKE) -C layout-tools fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

bench: kernel tools
	@scripts/bench

# ---- installation (docs/building.md, "Installing").  PREFIX=/usr gives
# Debian's paths (multiarch libdir, /usr/lib/python3/dist-packages); fgk-gdb's
# loader goes into gdb's own data directory, the one place every gdb reads
# at startup.  The manifest lists what was installed, for make uninstall.
PREFIX ?= /usr/local
DESTDIR ?=
MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
INSTALL_LIBDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/$(MULTIARCH),$(PREFIX)/lib)
INSTALL_PYDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages)
GDB_DATADIR ?= /usr/share/gdb
INSTALL_MANIFEST ?= $(CURDIR)/build/install-manifest$(if $(DESTDIR),-$(subst /,_,$(abspath $(DESTDIR))))
INSTALL_ENV = PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) LIBDIR=$(INSTALL_LIBDIR) PYDIR=$(INSTALL_PYDIR) \
	GDB_DATADIR=$(GDB_DATADIR) MANIFEST=$(INSTALL_MANIFEST) BUILD=$(CURDIR)/build PYTHON=$(PYTHON)

# no $(DEPS_STAMP): dpkg-buildpackage runs this with Build-Depends checked
install:
	$(MAKE) -C layout-tools install-files
	$(INSTALL_ENV) scripts/install install

uninstall:
	$(INSTALL_ENV) scripts/install uninstall

# Debian packages from the files git knows (committed or not), built in a
# copy under build/deb/src so that dpkg-buildpackage's ../ is build/deb.
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version)
deb: $(DEPS_STAMP)
	rm -rf build/deb && mkdir -p build/deb/src/fgk-$(DEB_VERSION)
	git ls-files -z --cached --others --exclude-standard --deduplicate | \
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | \
		tar -xf - -C build/deb/src/fgk-$(DEB_VERSION)
	cd build/deb/src/fgk-$(DEB_VERSION) && \
		dpkg-buildpackage -F -uc -us --no-sign -j$$(nproc) >../../build.log 2>&1 || \
		{ tail -40 ../../build.log; echo "make deb: failed, log in build/deb/build.log" >&2; exit 1; }
	mv build/deb/src/*.deb build/deb/src/*.changes build/deb/src/*.buildinfo build/deb/src/*.dsc build/deb/src/*.tar.* build/deb/
	rm -rf build/deb/src
	@ls build/deb/*.deb

# Debian packages of the FG-KASLR kernel through the kernel's own bindeb-pkg
# (scripts/kernel-deb: the configuration of KVARIANT/KVERSION made as make
# kernel makes it, own tree, niced; whole kernel build), and the opt-in proof
# that the package boots and its -dbg vmlinux is that kernel (not in make
# check: it needs that kernel build)
KERNEL_DEB_DIR := build/kernel-deb$(if $(filter-out 6.1,$(KVERSION)),-$(KVERSION))$(if $(KVARIANT),-$(KVARIANT))
kernel-deb: $(DEPS_STAMP)
	@scripts/kernel-deb

kernel-deb-check: $(DEPS_STAMP) tools
	@test -f $(KERNEL_DEB_DIR)/release || $(MAKE) kernel-deb
	FGK_KERNEL_DEB=1 $(PYTHON) -m pytest -p no:cacheprovider -c tests/pytest.ini -v \
		$(PYTEST_ARGS) tests/test_kernel_deb.py

clean:
	rm -rf build/runs build/initramfs

distclean:
	rm -rf build
