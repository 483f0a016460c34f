# flowbridge: build, test and benchmark. Every target installs the Debian packages it needs first,
# so a machine that has only Swift can run `make test`.

SWIFT ?= swift
# Debian packages the build, the tests and the benchmark need.
DEB_PACKAGES := pkg-config libmosquitto-dev libcurl4-openssl-dev libyaml-dev libssl-dev \
                mosquitto mosquitto-clients openssl tzdata systemd strace
# And what the ingest benchmark needs besides: a C compiler for its publisher, Python for the paho
# bridge (paho-mqtt itself goes into a throwaway virtual environment), mqtt2prometheus.
BENCH_PACKAGES := gcc curl python3 python3-venv prometheus-mqtt-exporter
# And what the screenshots of the pictures need.
SCREENSHOT_PACKAGES := chromium python3

BENCH_MESSAGES ?= 150000
BENCH_ROUNDS ?= 3
BENCH_IDLE_SECONDS ?= 60
# Where `make screenshot` writes its pictures and screenshots.
SCREENSHOTS ?= .build/screenshots

.PHONY: deps build test release bench screenshot clean

## deps: install the Debian packages that are missing (apt-get, via sudo when not root).
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	  else echo "error: missing Debian packages:$$missing; install them as root (apt-get install$$missing)" >&2; exit 1; fi; \
	  command -v apt-get >/dev/null 2>&1 || { echo "error: no apt-get here; install:$$missing" >&2; exit 1; }; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing \
	    || { echo "error: could not install:$$missing" >&2; exit 1; }; \
	fi

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product flowbridge

## bench: the ingest benchmark (bench/run.sh): flowbridge beside the C floor, mqtt2prometheus and
## a paho-mqtt bridge, and with a widget API sink pushing to the widget stand-in; interleaved
## rounds, medians, ratios, the CPU of a minute of silence, and whether each target is met.
bench: release
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build --product WidgetStandIn
	bench/run.sh .build/release/flowbridge $(BENCH_MESSAGES) $(BENCH_ROUNDS) $(BENCH_IDLE_SECONDS) \
	  "$$($(SWIFT) build --show-bin-path)/WidgetStandIn"

## screenshot: the bundled day (Tests/Fixtures/home-day.*) through `replay --svg` and `render`, each
## picture screenshotted by headless Chromium and checked not to be blank (scripts/screenshot.sh).
screenshot: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(SCREENSHOT_PACKAGES)"
	rm -rf $(SCREENSHOTS) && mkdir -p $(SCREENSHOTS)
	$$($(SWIFT) build --show-bin-path)/flowbridge replay --config Tests/Fixtures/home-day.yaml \
	  --state $(SCREENSHOTS)/state.json --svg $(SCREENSHOTS)/replay Tests/Fixtures/home-day.ndjson >/dev/null
	$$($(SWIFT) build --show-bin-path)/flowbridge render --config Tests/Fixtures/home-day.yaml \
	  --state $(SCREENSHOTS)/state.json --out $(SCREENSHOTS)/render
	scripts/screenshot.sh $(SCREENSHOTS)

clean:
	rm -rf .build
