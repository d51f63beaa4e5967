# imagepipe: `make demo` runs the batch on the bundled fixtures, `make test` runs every test.
# Both install missing Debian/Ubuntu packages first (as root, or through sudo).

SWIFT       ?= swift
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libvips-dev libvips-tools libcurl4-openssl-dev libssl-dev pkg-config
RELEASE_BIN := .build/release/imagepipe

.PHONY: demo test test-deps deps build release check-swift clean bench bench-compare bench-thresholds bench-deps soak

demo: deps release
	rm -rf out
	$(RELEASE_BIN) batch fixtures/images --dest out --manifest out/manifest.jsonl
	@echo "variants in ./out, one JSON line per image in ./out/manifest.jsonl"

test: deps test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Tools only the tests need: PostgreSQL 15 (the queue tests start it themselves, initdb into a
# temporary directory), moto's S3 server and boto3 (servers started on loopback), the reference
# `ssimulacra2` and `thumbhash` packages (oracles for the scores and placeholders), iproute2 (a
# worker on a second host in a network namespace), Chromium (renders the report), and Prometheus
# with promtool and curl (check and scrape the metrics endpoint).
test-deps:
	@[ -x /usr/lib/postgresql/15/bin/initdb ] || { \
		echo "installing postgresql for the PostgreSQL queue tests"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
	}
	@python3 -c "import moto.server, boto3, ssimulacra2, thumbhash" 2>/dev/null || { \
		echo "installing moto[server], boto3, ssimulacra2 and thumbhash for the tests"; \
		python3 -m pip --version >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip; }; \
		python3 -m pip install --quiet "moto[server]>=5,<6" boto3 "ssimulacra2==0.3.0" "thumbhash==0.1.2" 2>/dev/null || \
			python3 -m pip install --quiet --break-system-packages "moto[server]>=5,<6" boto3 "ssimulacra2==0.3.0" "thumbhash==0.1.2"; \
	}
	@[ -x /usr/sbin/ip ] || { echo "installing iproute2 for the test that puts a worker on a host of its own (network namespace)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2; }
	@command -v chromium >/dev/null || { echo "installing chromium for the report test"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@{ command -v promtool && command -v prometheus && command -v curl; } >/dev/null || { \
		echo "installing prometheus and curl for the metrics tests"; $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus curl; }

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
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6.1 or later is needed: https://www.swift.org/install/linux/"; exit 1; }

# Benchmarks, outside `make test`: the package-benchmark suite on the compression hot path, checked
# against the committed thresholds, and `imagepipe bench --compare` against reference tools.
bench: deps bench-deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark thresholds check

bench-thresholds: deps bench-deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox --allow-writing-to-package-directory benchmark thresholds update

bench-compare: deps bench-deps release
	$(RELEASE_BIN) bench --compare --runs 3

bench-deps:
	@command -v /usr/bin/convert >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends imagemagick; }
	@python3 -c "import pyvips, PIL" 2>/dev/null || python3 -m pip install -q pyvips pillow || python3 -m pip install -q --break-system-packages pyvips pillow

# The soak run: the release worker on a queue for SOAK_MINUTES under a trickle of corpus images and bad
# files, sampled every 10 s; table, plot and goal checks in .soak/ (exit status 1 when a goal is broken).
SOAK_MINUTES ?= 30
soak: deps release
	@[ -d .bench/corpus ] || fixtures/make-corpus.sh .bench/corpus
	python3 Benchmarks/soak/soak.py --binary $(RELEASE_BIN) --minutes $(SOAK_MINUTES) --corpus .bench/corpus --out .soak \
		--plot-copy Benchmarks/soak/soak.svg

clean:
	rm -rf .build out .bench .soak Benchmarks/.build
