# imagepipe: `make demo` runs the batch on the bundled fixtures, `make test` runs every test,
# `make install` and `make deb` put the worker on a server without Swift (README, "Deploy").
# They install missing Debian/Ubuntu packages first (as root, or through sudo).

SWIFT       ?= swift
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libvips-dev libvips-tools libcurl4-openssl-dev libssl-dev pkg-config
RELEASE_BIN := .build/release/imagepipe
# The static build has a scratch folder of its own: SwiftPM keeps its build plan across a change of
# --static-swift-stdlib alone, and would link the binary of another build mode.
STATIC_BUILD := .build-static
STATIC_BIN  := $(STATIC_BUILD)/release/imagepipe

# Installation: `make install PREFIX=/usr/local DESTDIR=`; the units run $(PREFIX)/bin/imagepipe.
PREFIX      ?= /usr/local
DESTDIR     ?=
ZSH_COMPLETIONS := $(if $(filter /usr,$(PREFIX)),$(PREFIX)/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
DEB_DIR     ?= .build/deb
DEB_ROOT    = $(DEB_DIR)/root
ARCH        := $(shell dpkg --print-architecture 2>/dev/null)
# The Debian mirror this machine's apt uses, for the package test's Debian 12 root.
DEBIAN_MIRROR ?= $(shell sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)

.PHONY: demo test check test-deps format format-check deps build release check-swift clean bench bench-check bench-compare bench-thresholds bench-deps \
	static install install-files deb deb-package deb-test deb-deps image image-test image-deps soak fuzz fuzz-build fuzz-check fuzz-check-built

# The README's first example, as written there: the same folder, destination and manifest.
demo: deps release
	rm -rf out
	$(RELEASE_BIN) batch fixtures/images/formats --dest out --manifest out/manifest.jsonl
	$(RELEASE_BIN) srcset out/manifest.jsonl --base-url . > out/pictures.html
	$(RELEASE_BIN) report out/manifest.jsonl -o out/report.html
	@echo "the binary: $(RELEASE_BIN) (make install puts it on PATH); variants in ./out, one JSON line per image in"
	@echo "./out/manifest.jsonl, <picture> markup in ./out/pictures.html, the report in ./out/report.html"

# Two runs of the one test binary: the suites that run workers and pipelines in-process (async,
# on Swift's cooperative pool, which imagepipe never blocks), then the rest, whose synchronous tests
# hold a pool thread each while they wait for processes and would starve the first kind.
IN_PROCESS_SUITES := ImagePipeTests\.|ImagePipeQueueTests\.|ImagePipeLocalStorageTests\.|ImagePipePostgresTests\.(FirstOutcomeTests|PostgresLocationTests|PostgresQueueTests|PostgresQueueContractTests|QueueMeasurement|SupabaseTriggerTests)
# Each run leaves its results in .build/test-results; the run ends with what each suite took.
TEST_RESULTS := .build/test-results
# The fuzzing build comes first: it builds the dependencies the debug build then finds made.
# `bench-check` runs beside the process suites at the lowest priority (`nice -n 19`): they leave about
# a fifth of two cores idle while they wait for processes, and it takes only that, its metrics
# (resident peak, malloc count) being the ones the machine's load does not move. Its output follows
# theirs. The timed fuzz runs come after both, with the machine to themselves.
BENCH_CHECK_LOG := .build/bench-check.log
test: deps test-deps format-check fuzz-build
	$(SWIFT) build --build-tests
	@rm -rf $(TEST_RESULTS) && mkdir -p $(TEST_RESULTS)
	$(SWIFT) test --skip-build --filter '$(IN_PROCESS_SUITES)' --xunit-output $(TEST_RESULTS)/in-process.xml
	@nice -n 19 $(MAKE) --no-print-directory bench-check > $(BENCH_CHECK_LOG) 2>&1 & bench=$$!; status=0; \
	echo "$(SWIFT) test --skip-build --skip '$(IN_PROCESS_SUITES)' (beside it: make bench-check, niced, into $(BENCH_CHECK_LOG))"; \
	$(SWIFT) test --skip-build --skip '$(IN_PROCESS_SUITES)' --xunit-output $(TEST_RESULTS)/others.xml || status=$$?; \
	wait $$bench; bench_status=$$?; echo "make bench-check (run beside the suites):"; cat $(BENCH_CHECK_LOG); \
	[ $$bench_status -eq 0 ] || { echo "make bench-check failed (exit $$bench_status)"; exit 1; }; exit $$status
	$(MAKE) fuzz-check-built
	@.ci/test-times $(TEST_RESULTS)/*-swift-testing.xml

# The fast tier to run before each commit, about 3½ minutes from a warm build on two cores: the format,
# the build, the in-process suites, the in-process libvips, sandbox, monitoring and bench suites, and
# the process suites of the commands people run first. `make test` (CI) runs everything.
CHECK_SUITES := ImagePipeVipsTests\.|ImagePipeSandboxTests\.|ImagePipeMonitoringTests\.|ImagePipeBenchTests\.|ImagePipeCLITests\.(BatchCommandTests|MessageTests|SandboxCommandTests|DryRunCommandTests|ConfigurationTests|WatchCommandTests|QueueDirectoryCommandTests|WorkerCrashTests)
check: deps test-deps format-check
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --filter '$(IN_PROCESS_SUITES)'
	$(SWIFT) test --skip-build --filter '$(CHECK_SUITES)'

# Fuzzing (Tests/Fuzz/README.md): libFuzzer harnesses of every parser of untrusted input, C ones with
# AddressSanitizer and UBSan, Swift ones with AddressSanitizer, kept in .build-fuzz. `make fuzz`
# runs each for FUZZ_SECONDS (`make fuzz FUZZ_SECONDS=600`; FUZZ_TARGETS="toml s3-xml" for some);
# an input that crashes, trips a sanitizer, runs past 5 s or holds more than 2 GB is kept in
# fixtures/fuzz/crashes/TARGET/ and fails the run. `make test` replays every seed and crash input
# through every harness, fuzzes each for FUZZ_CHECK_SECONDS (one target per core at a time), and runs
# the hostile fixtures through the `imagepipe` of the same sanitized build.
FUZZ_SECONDS ?= 15
# Ten seconds a target in `make test`: it starts from the seeds, and in a fresh clone's run the later
# half of twenty seconds' executions found no new coverage in 10 of the 19 targets, 1 to 7 edges in the rest,
# and cost 95 s of the run's wall time. The long search for new inputs is `make fuzz`'s.
FUZZ_CHECK_SECONDS ?= 10
SANITIZED_BIN := .build-fuzz/bin/imagepipe

# `make test`'s fuzzing build leaves imagepipe's modules unoptimized (a minute and a half to build);
# `make fuzz` optimizes them (FUZZ_OPTIMIZE=1: two minutes more, three to four times the executions).
FUZZ_OPTIMIZE ?= 0
fuzz-build: deps
	FUZZ_OPTIMIZE=$(FUZZ_OPTIMIZE) SWIFT=$(SWIFT) Tests/Fuzz/fuzz.sh build

fuzz: FUZZ_OPTIMIZE = 1
fuzz: fuzz-build
	SWIFT=$(SWIFT) Tests/Fuzz/fuzz.sh run $(FUZZ_SECONDS)

# The worker of the fuzzing build has AddressSanitizer on imagepipe's own code and UBSan on its C
# targets. The Swift harness and that worker are built in .build (see Package.swift), the debug build's
# folder, and copied to .build-fuzz/bin: the next plain build compiles imagepipe's modules back.
fuzz-check: fuzz-build
	$(MAKE) fuzz-check-built

# What fuzz-check runs on a fuzzing build already made.
fuzz-check-built:
	SWIFT=$(SWIFT) Tests/Fuzz/fuzz.sh replay
	SWIFT=$(SWIFT) Tests/Fuzz/fuzz.sh run $(FUZZ_CHECK_SECONDS)
	$(SWIFT) build --build-tests
	IMAGEPIPE_SANITIZED_BINARY=$(CURDIR)/$(SANITIZED_BIN) $(SWIFT) test --skip-build --filter SanitizedBatchTests

# One layout for all Swift code (swift-format from the toolchain, settings in .ci/swift-format.json:
# layout only, no rewriting rules). `make format` applies it; `make test` fails on code that differs.
FORMATTED = Sources Tests Benchmarks
format:
	$(SWIFT) format format --configuration .ci/swift-format.json --in-place --recursive --parallel $(FORMATTED)

format-check:
	@$(SWIFT) format lint --configuration .ci/swift-format.json --strict --recursive --parallel $(FORMATTED) || { \
		echo "Swift code is not formatted: run 'make format'"; exit 1; }

# Tools only the tests need: PostgreSQL (the queue tests start it themselves, initdb into a
# temporary directory), moto's S3 server and boto3 (servers started on loopback), the reference
# `ssimulacra2` and `thumbhash` packages (oracles for the scores and placeholders), iproute2 (a
# worker on a second host in a network namespace), Chromium (renders the report), and Prometheus
# with promtool and curl (check and scrape the metrics endpoint), strace (the order of fsyncs and
# renames under `batch`), and dpkg-dev, groff and binutils (the package made from the test build, the manual).
test-deps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "installing postgresql for the PostgreSQL queue tests"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
	}
	@python3 -c "import moto.server, boto3, ssimulacra2, thumbhash, imagecodecs, pillow_heif, opentelemetry.proto.collector.trace.v1.trace_service_pb2" 2>/dev/null || { \
		echo "installing moto[server], boto3, ssimulacra2, thumbhash, imagecodecs (an independent libjxl and libultrahdr) pillow-heif (an independent libheif) and opentelemetry-proto (the OTLP protocol's own decoder) for the tests"; \
		python3 -m pip --version >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip; }; \
		python3 -m pip install --quiet "moto[server]>=5,<6" boto3 "ssimulacra2==0.3.0" "thumbhash==0.1.2" pillow "imagecodecs>=2024.1" "pillow-heif>=0.18" "opentelemetry-proto>=1.20" "pdqhash>=0.2" 2>/dev/null || \
			python3 -m pip install --quiet --break-system-packages "moto[server]>=5,<6" boto3 "ssimulacra2==0.3.0" "thumbhash==0.1.2" pillow "imagecodecs>=2024.1" "pillow-heif>=0.18" "opentelemetry-proto>=1.20" "pdqhash>=0.2"; \
	}
	@[ -x /usr/sbin/ip ] || { echo "installing iproute2 for the test that puts a worker on a host of its own (network namespace)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2; }
	@command -v chromium >/dev/null || { echo "installing chromium for the report test"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@{ command -v promtool && command -v prometheus && command -v curl; } >/dev/null || { \
		echo "installing prometheus and curl for the metrics tests"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus curl; }
	@command -v exiftool >/dev/null || { echo "installing exiftool, the metadata tests' oracle"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libimage-exiftool-perl; }
	@command -v strace >/dev/null || { echo "installing strace for the test that checks the order of fsyncs and renames"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace; }
	@{ command -v dpkg-shlibdeps && command -v groff && command -v objdump; } >/dev/null || { \
		echo "installing dpkg-dev, groff-base and binutils for the package and manual tests"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev groff-base binutils; }
	@command -v systemd-analyze >/dev/null || { echo "installing systemd for systemd-analyze verify of deploy/"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd; }

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product imagepipe

deps: check-swift
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

check-swift:
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6.2 or later is needed: https://www.swift.org/install/linux/"; exit 1; }

# Benchmarks: the package-benchmark suite on the compression hot path (its own package, Benchmarks/,
# built in release), checked against the thresholds committed in Benchmarks/Thresholds, and
# `imagepipe bench --compare` against reference tools. `make bench` checks what travels between
# machines (docs/performance.md, "The benchmark suite"): each benchmark's CPU time as a ratio to the
# same libvips work done plainly beside it in the same run (cpuVsPlainLibvips, in thousandths, within
# 20%), resident peak (20%) and malloc count (10%); CPU time and wall clock are shown, not checked.
# `make test` runs `make bench-check`, the part that needs no reference: resident peak and malloc
# count, from a few iterations of each benchmark.
BENCH_CHECK := $(SWIFT) package --disable-sandbox benchmark thresholds check --no-progress
bench: deps
	cd Benchmarks && $(BENCH_CHECK)

# package-benchmark's plugin, on Swift 6.3, says that it runs with its Swift runtime interposer and
# then that it skips preloading it as it is not built. The suite leaves that interposer out on
# purpose: its RuntimeInterposer trait only guards the counting of retains and releases on Swift
# 6.3, which no benchmark here records, and preloading it would change what is measured. Those two
# lines, the first untrue here, are left out of the output; every other line is kept, and the
# check's exit status is the plugin's.
BENCH_NOTES := -e 'Warning: running with the Swift runtime interposer on Linux' \
	-e 'skipping LD_PRELOAD of .*/libSwiftRuntimeInterposerSwift\.so (not built)'
bench-check: SHELL := /bin/bash
bench-check: deps
	cd Benchmarks && set -o pipefail && \
		IMAGEPIPE_BENCH_QUICK=1 $(BENCH_CHECK) --metric peakMemoryResident --metric mallocCountTotal 2>&1 | grep -v $(BENCH_NOTES)

# Stores the p90 of the checked metrics alone: a threshold file's metrics are what `make bench`
# checks, and an absolute CPU time or wall clock stored here would fail on a slower machine.
BENCH_CHECKED := --metric cpuVsPlainLibvips --metric peakMemoryResident --metric mallocCountTotal
bench-thresholds: deps
	@echo "Storing in Benchmarks/Thresholds the p90 of each benchmark's CPU time over the plain libvips reference's"
	@echo "(cpuVsPlainLibvips), resident peak and malloc count: what make bench checks, as they travel between"
	@echo "machines. Absolute CPU time and wall clock are not stored: they differ by half or more between machines."
	cd Benchmarks && $(SWIFT) package --disable-sandbox --allow-writing-to-package-directory benchmark thresholds update --no-progress $(BENCH_CHECKED)

bench-compare: deps bench-deps release
	$(RELEASE_BIN) bench --compare --runs 3

bench-deps:
	@command -v /usr/bin/convert >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends imagemagick; }
	@python3 -c "import pyvips, PIL" 2>/dev/null || python3 -m pip install -q pyvips pillow || python3 -m pip install -q --break-system-packages pyvips pillow

# The release binary with Swift's own libraries linked in (Foundation's ICU too): it needs only Debian's shared libraries.
static: deps
	$(SWIFT) build -c release --product imagepipe --static-swift-stdlib --scratch-path $(STATIC_BUILD)
	@if ldd $(STATIC_BIN) | grep -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|not found'; then \
		echo "$(STATIC_BIN) still needs the libraries above"; exit 1; fi

# The man page is deploy/imagepipe.1, written by hand (a test checks that it names every command and
# that groff finds nothing to warn about); installed gzipped.
install: static
	$(MAKE) install-files INSTALL_BIN=$(STATIC_BIN)

# What `make install` puts in place, for a binary already built (INSTALL_BIN).
INSTALL_BIN ?= $(STATIC_BIN)
install-files:
	install -Dm755 $(INSTALL_BIN) $(DESTDIR)$(PREFIX)/bin/imagepipe
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(ZSH_COMPLETIONS) \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/share/doc/imagepipe
	$(INSTALL_BIN) --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/imagepipe
	$(INSTALL_BIN) --generate-completion-script zsh > $(DESTDIR)$(ZSH_COMPLETIONS)/_imagepipe
	$(INSTALL_BIN) --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/imagepipe.fish
	gzip -9n < deploy/imagepipe.1 > $(DESTDIR)$(PREFIX)/share/man/man1/imagepipe.1.gz
	for unit in imagepipe.service imagepipe@.service; do \
		sed 's|/usr/bin/imagepipe|$(PREFIX)/bin/imagepipe|' deploy/$$unit > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$unit; \
	done
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/imagepipe*.service $(DESTDIR)$(PREFIX)/share/bash-completion/completions/imagepipe \
		$(DESTDIR)$(ZSH_COMPLETIONS)/_imagepipe $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/imagepipe.fish \
		$(DESTDIR)$(PREFIX)/share/man/man1/imagepipe.1.gz
	install -m644 deploy/imagepipe.example.toml $(DESTDIR)$(PREFIX)/share/doc/imagepipe/imagepipe.example.toml
	install -m644 deploy/debian/copyright $(DESTDIR)$(PREFIX)/share/doc/imagepipe/copyright

# A Debian package of `make install PREFIX=/usr`, the example as /etc/imagepipe/imagepipe.toml, and its
# runtime dependencies as dpkg-shlibdeps finds them from the libraries the binary links, raised to the
# image libraries' security updates in deploy/debian/decoder-minimums.
deb: deb-deps static
	$(MAKE) deb-package DEB_BIN=$(STATIC_BIN)

# The packaging of a binary already built (DEB_BIN): DeployFilesTests packages the debug build this
# way, with DEB_SHLIBDEPS_FLAGS=--ignore-missing-info for the Swift libraries no Debian package has.
DEB_BIN ?= $(STATIC_BIN)
MAINTAINER ?= imagepipe maintainers <maintainers@imagepipe.invalid>
DEB_SHLIBDEPS_FLAGS ?=
deb-package:
	rm -rf $(DEB_DIR)
	$(MAKE) install-files PREFIX=/usr DESTDIR=$(abspath $(DEB_ROOT)) INSTALL_BIN=$(abspath $(DEB_BIN))
	strip --strip-unneeded $(DEB_ROOT)/usr/bin/imagepipe
	install -Dm644 deploy/imagepipe.example.toml $(DEB_ROOT)/etc/imagepipe/imagepipe.toml
	install -d $(DEB_ROOT)/DEBIAN
	install -m755 deploy/debian/postinst deploy/debian/postrm $(DEB_ROOT)/DEBIAN/
	install -m644 deploy/debian/conffiles $(DEB_ROOT)/DEBIAN/
	cd $(DEB_ROOT) && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums
	mkdir -p $(DEB_DIR)/debian && printf 'Source: imagepipe\n\nPackage: imagepipe\nArchitecture: any\n' > $(DEB_DIR)/debian/control
	cd $(DEB_DIR) && dpkg-shlibdeps $(DEB_SHLIBDEPS_FLAGS) -O root/usr/bin/imagepipe | sed -n 's/^shlibs:Depends=//p' > depends.found
	@test -s $(DEB_DIR)/depends.found || { echo "dpkg-shlibdeps found no dependencies"; exit 1; }
	deploy/debian/raise-depends deploy/debian/decoder-minimums < $(DEB_DIR)/depends.found > $(DEB_DIR)/depends
	version=$$($(DEB_BIN) --version); \
	sed -e "s/@VERSION@/$$version/" -e "s/@ARCH@/$(ARCH)/" -e "s/@DEPENDS@/$$(cat $(DEB_DIR)/depends), passwd/" \
		-e "s|@MAINTAINER@|$(MAINTAINER)|" \
		-e "s/@SIZE@/$$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1)/" deploy/debian/control.in > $(DEB_ROOT)/DEBIAN/control; \
	dpkg-deb --root-owner-group $(DPKG_DEB_FLAGS) --build $(DEB_ROOT) $(DEB_DIR)/imagepipe_$${version}_$(ARCH).deb
	@ls -l $(DEB_DIR)/*.deb && dpkg-deb --field $(DEB_DIR)/*.deb Maintainer Depends

# Installs the package on a Debian 12 root made by debootstrap from the mirror apt uses (no Swift
# there) and runs `imagepipe batch` on the fixtures inside it. Not part of `make test`: the static
# release build and the new root take about 15 minutes on two cores.
deb-test: deb
	$(SWIFT) build --build-tests
	IMAGEPIPE_DEB=$(CURDIR)/$$(ls $(DEB_DIR)/*.deb) IMAGEPIPE_DEBIAN_MIRROR=$(DEBIAN_MIRROR) \
		$(SWIFT) test --skip-build --filter DebianPackageTests

# The container image (docs/operations.md, "The container image"): the package `make deb` builds,
# installed on Debian 12 slim by mmdebstrap from the mirror apt uses, written by umoci as one tar that
# is an OCI image layout (podman load, skopeo) and what docker load reads; no container engine is
# needed to build it.
IMAGE_ARCHIVE ?= .build/image/imagepipe-image.tar
image: image-deps deb
	deploy/image/build-image.sh "$$(ls $(DEB_DIR)/*.deb)" $(IMAGE_ARCHIVE) "$$($(STATIC_BIN) --version)" $(DEBIAN_MIRROR)

# Reads the image's configuration back with skopeo, unpacks it with umoci and runs batch and the image's
# own watch in its root (ImageArchiveTests). Not part of `make test`: on two cores the static release
# build and the package took 9.5 minutes from scratch, the root, the archive and the test 3.5 more.
image-test: image
	$(SWIFT) build --build-tests
	IMAGEPIPE_IMAGE=$(CURDIR)/$(IMAGE_ARCHIVE) $(SWIFT) test --skip-build --filter ImageArchiveTests

image-deps: deb-deps
	@missing=""; for p in mmdebstrap umoci skopeo; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deb-deps: deps
	@missing=""; for p in dpkg-dev debootstrap; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The soak run: the release worker on a queue for SOAK_MINUTES under a trickle of corpus images and bad
# files, sampled every 10 s; table, plot and goal checks in .soak/ (exit status 1 when a goal is broken).
SOAK_MINUTES ?= 30
soak: deps release
	@[ -d .bench/corpus ] || fixtures/make-corpus.sh .bench/corpus
	python3 Benchmarks/soak/soak.py --binary $(RELEASE_BIN) --minutes $(SOAK_MINUTES) --corpus .bench/corpus --out .soak \
		--plot-copy Benchmarks/soak/soak.svg

clean:
	rm -rf .build $(STATIC_BUILD) .build-fuzz out .bench .soak Benchmarks/.build
