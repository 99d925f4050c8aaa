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
#   make check     every test (unit tier first), then the k612 ones on 6.12
#   make check-debian  build Debian's config (KVARIANT=debian, ~35 min) and
#                  run every test against it, plus tests/test_debian.py
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

.PHONY: all deps kernel tools demo check check-unit check-k612 check-debian check-k612-background bench clean distclean help fuzz \
	install uninstall deb kernel-deb kernel-deb-check perf-model
.DEFAULT_GOAL := help

help:
	@sed -n '3,24p' Makefile | sed 's/^# \{0,1\}//'

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

# pytest's temporary directories, one per tier under build/: the 6.1 and
# k612 tiers of make check run at the same time and never share one.  pytest
# empties its --basetemp when it starts, so a second session on the same one
# (another make check in this tree) waits for the first (flock).
PYTEST_TMP := build/pytest-$(or $(KVERSION),6.1)$(if $(KVARIANT),-$(KVARIANT))
K612_PYTEST := KVERSION=6.12 KVARIANT= flock build/pytest-k612.lock $(PYTHON) -m pytest -p no:cacheprovider \
	-v --durations=40 --basetemp=build/pytest-k612 -m k612 $(PYTEST_ARGS) tests/
K612_LOG := build/check-k612.log
K612_SYNC := build/.check-6.1-built

# the unit tier first: a broken parser fails before the 6.1 kernel build
# (and stops the background one).  The default run builds the 6.12 kernel in
# the background from the start (nice 19, log build/kernel-6.12-check.log),
# beside the unit tier, the 6.1 kernel and its tests, which mostly wait on
# one single-threaded QEMU; once both kernels are built, the k612 tier
# (check-k612-background, log build/check-k612.log, printed at the end) runs
# beside the 6.1 tier.  make check fails if either tier or the 6.12 build
# failed, and says which.  Where the kernel groups processes by session
# (sched_autogroup_enabled=1), the background job's setsid gives it a group
# of its own, which shares the CPU equally with make check's whatever its
# nice value: both kernels then finish at about the same time, and both
# tiers start together, which is what keeps the end early (the 6.1 tier is
# the longer one).
check: $(DEPS_STAMP) tools
	@bg=; if [ -z "$(KVERSION)$(KVARIANT)" ]; then \
	    echo "make check: $$(date -u +%T): building the 6.12 kernel in the background (nice 19, build/kernel-6.12-check.log), then its k612 tier beside the 6.1 tier ($(K612_LOG))"; \
	    rm -f $(K612_SYNC); \
	    setsid $(MAKE) --no-print-directory check-k612-background < /dev/null > $(K612_LOG) 2>&1 & bg=$$!; \
	    trap '[ -z "$$bg" ] || kill -TERM -- -$$bg 2>/dev/null' EXIT; trap 'exit 130' INT TERM HUP; \
	fi; \
	$(MAKE) check-unit || exit 1; \
	$(MAKE) --no-print-directory kernel tools || exit 1; \
	[ -z "$$bg" ] || touch $(K612_SYNC); \
	echo "make check: the $(or $(KVERSION),6.1)$(if $(KVARIANT), $(KVARIANT)) tier starts at $$(date -u +%T)"; \
	rc=0; flock $(PYTEST_TMP).lock $(PYTHON) -m pytest -p no:cacheprovider -v --durations=40 --basetemp=$(PYTEST_TMP) \
	    $(PYTEST_ARGS) tests/ || rc=$$?; \
	[ -n "$$bg" ] || exit $$rc; \
	echo "make check: the 6.1 tier exited $$rc at $$(date -u +%T); waiting for the k612 tier ($(K612_LOG))"; \
	krc=0; wait $$bg || krc=$$?; bg=; rm -f $(K612_SYNC); \
	echo "======================== the k612 tier on 6.12 ($(K612_LOG)) ========================"; \
	cat $(K612_LOG); \
	if [ $$krc -ne 0 ] && grep -q '^make check: the 6.12 kernel build failed' $(K612_LOG); then \
	    k612="FAILED (the 6.12 kernel build)"; \
	elif [ $$krc -ne 0 ]; then k612="FAILED"; else k612=passed; fi; \
	echo "make check: 6.1 tier $$([ $$rc -eq 0 ] && echo passed || echo FAILED), k612 tier on 6.12 $$k612"; \
	[ $$rc -eq 0 ] && [ $$krc -eq 0 ]

# make check's second tier, started in the background by it: the 6.12 kernel
# at nice 19, then (once make check has the 6.1 kernel) the k612 tests.
check-k612-background:
	@nice -n 19 $(MAKE) --no-print-directory kernel KVERSION=6.12 KVARIANT= \
	    > build/kernel-6.12-check.log 2>&1 || { \
	    echo "make check: the 6.12 kernel build failed; its log's end (build/kernel-6.12-check.log):"; \
	    tail -n 40 build/kernel-6.12-check.log; exit 1; }
	@tail -n 2 build/kernel-6.12-check.log; echo "make check: the 6.12 kernel is ready at $$(date -u +%T)"
	@while [ ! -e $(K612_SYNC) ]; do sleep 2; done
	@echo "make check: the k612 tier starts at $$(date -u +%T)"
	$(K612_PYTEST)
	@echo "make check: the k612 tier ended at $$(date -u +%T)"

# The second kernel: the tests marked k612 (tests/pytest.ini) again, on the
# 6.12 build (build/kernel-6.12).  `make check KVERSION=6.12` runs the whole
# suite on it.
check-k612: $(DEPS_STAMP) tools
	$(MAKE) kernel KVERSION=6.12 KVARIANT=
	$(K612_PYTEST)

# The whole suite on Debian's own configuration (docs/debian-kernel.md):
# KVARIANT=debian points the runner, the tests and their skips at
# build/kernel-debian (KVERSION=6.12: build/kernel-6.12-debian, on Debian's
# 6.12 config).  `make check` runs tests/test_debian.py where that build
# exists, check-k612 where build/kernel-6.12-debian does, and each skips it,
# saying why, where it does not.
check-debian: $(DEPS_STAMP)
	$(MAKE) check KVARIANT=debian

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
	rm -rf build/runs build/initramfs build/pytest-*

distclean:
	rm -rf build
