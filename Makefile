# flowbridge: build, test and benchmark. Every target installs the Debian packages it needs first,
# so a machine that has only Swift can run `make test`.

SWIFT ?= swift
# Debian packages the build, the tests and the benchmark need (jq and curl: the Home Assistant
# add-on's run script, which the tests run).
DEB_PACKAGES := pkg-config libmosquitto-dev libcurl4-openssl-dev libyaml-dev libssl-dev libsqlite3-dev libmicrohttpd-dev \
                mosquitto mosquitto-clients openssl tzdata systemd strace jq curl
# And what `make test` needs besides (large, so only there): a real Prometheus that scrapes the
# window, headless Chromium that opens its page, and Python for the screenshot check.
TEST_PACKAGES := prometheus chromium python3
# And what the ingest benchmark needs besides: a C compiler for its publisher, Python for the paho
# bridge (paho-mqtt itself goes into a throwaway virtual environment), mqtt2prometheus.
BENCH_PACKAGES := gcc curl python3 python3-venv prometheus-mqtt-exporter
# And what the screenshots of the pictures need.
SCREENSHOT_PACKAGES := chromium python3
# And what `make ha-check` needs besides: Python for Home Assistant core (itself installed from the
# Python registry into a throwaway virtual environment, HA_VENV), and the broker it discovers on.
HA_CHECK_PACKAGES := python3 python3-venv mosquitto
# Home Assistant 2025.4.4 needs Python 3.13 (2025.5 and later 3.13.2, which is not to be had here):
# pyenv's (`pyenv root`, else ~/.pyenv) or the system's; HA_PYTHON313=/path/to/python3.13 names
# another. Without one, HA_VERSION falls back to 2024.3.3 on python3 (3.11); HA_VERSION=2024.3.3
# chooses it anyway. Each release has its pinned set, tools/ha-check/requirements-<release>.txt.
HA_PYENV_ROOT = $(or $(PYENV_ROOT),$(shell pyenv root 2>/dev/null),$(HOME)/.pyenv)
HA_PYTHON313 ?= $(firstword $(wildcard $(HA_PYENV_ROOT)/versions/3.13*/bin/python3.13 /usr/local/bin/python3.13 /usr/bin/python3.13))
HA_VERSION ?= $(if $(HA_PYTHON313),2025.4.4,2024.3.3)
HA_PYTHON = $(if $(filter 2024.3.3,$(HA_VERSION)),python3,$(HA_PYTHON313))
HA_REQUIREMENTS = tools/ha-check/requirements-$(HA_VERSION).txt
HA_VENV ?= .build/ha-check/venv-$(HA_VERSION)
# And what the soak needs besides the broker: Python for its publisher and its checks.
SOAK_PACKAGES := python3
# And what `make deb` needs besides: Debian's packaging tools (dpkg-deb, dpkg-shlibdeps,
# dpkg-parsechangelog), lintian, strip, and Python for the man pages.
DEB_BUILD_PACKAGES := dpkg-dev lintian binutils python3
# And what `make package-check` needs besides: debootstrap for the clean root, and a broker and
# its publisher on this machine's loopback (Python finds the free port).
PACKAGE_CHECK_PACKAGES := debootstrap mosquitto mosquitto-clients python3
# And what `make image` needs besides: podman to build the image, debootstrap for its base.
IMAGE_PACKAGES := podman debootstrap
# The package: its version is the binary's (Sources/Platform/Version.swift), its architecture this
# machine's, so an arm64 machine makes the arm64 package with the same targets.
VERSION = $(shell sed -n 's/.*static let version = "\(.*\)"/\1/p' Sources/Platform/Version.swift)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB = .build/deb/flowbridge_$(VERSION)_$(DEB_ARCH).deb
# Where package-check and image keep their clean Debian root (the tarball is reused; delete it for
# a fresh one) and the image's name.
PACKAGING_WORK ?= .build/packaging
IMAGE ?= localhost/flowbridge:$(VERSION)

BENCH_MESSAGES ?= 150000
BENCH_ROUNDS ?= 3
BENCH_IDLE_SECONDS ?= 60
# The paced runs of `make bench` (bench/paced.sh): RATE:COUNT, COUNT readings at RATE a second.
BENCH_PACES ?= 100:6000 10:1200
# The hostile part of `make bench` (bench/hostile.sh): BENCH_ROUNDS rounds of two phases this long
# (seconds), quiet and under hostile clients, with readings at this rate (a second).
BENCH_HOSTILE_SECONDS ?= 30
BENCH_HOSTILE_RATE ?= 10
# Where `make screenshot` writes its pictures and screenshots.
SCREENSHOTS ?= .build/screenshots
# The debug build, as the recipes find it.
FLOWBRIDGE = $$($(SWIFT) build --show-bin-path)/flowbridge

# `make run DEMO_ARGS="--duration 30"`: the demo stops by itself.
DEMO_ARGS ?=
# Seconds each fuzz target runs in `make fuzz`, and which targets.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= PayloadDecoder Config MergePatch

.PHONY: deps build run test release deb package-check image addon bench bench-hostile sd-writes screenshot ha-check soak fuzz fuzz-seeds clean

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

## run: the demo (scripts/demo.sh): a private mosquitto on a free loopback port, the simulated home
## at 720x and `flowbridge run --dry-run --summary` on a copy of Config/demo.yaml, every push printed
## as it goes out. Ctrl-C stops all of it. With DEMO_URL and DEMO_TOKEN set, it pushes to that widget.
run: build
	scripts/demo.sh $(DEMO_ARGS) $(FLOWBRIDGE)

test: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(TEST_PACKAGES)"
	$(SWIFT) build --build-tests
	$(SWIFT) test

## release: the static binary the package and the images ship. The functions a lone reading runs
## (bench/hot-functions.txt, made by bench/hot-functions.sh) are linked first, side by side: a
## reading at a home's pace finds its code cold, and spread over the executable it touched some 170
## pages (bench/NOTES.md). Each function is compiled into a section of its own, which lld places;
## a name the build no longer has is passed over. SwiftPM compiles nothing again for flags given on
## its command line, nor links again for a list that changed: a release build made with other
## compile flags is made anew, and a binary older than the list is linked again.
# `make deb RELEASE_FLAGS="-j 2"`: more of swift build's options for the release build (two jobs on a 2 GB Pi).
RELEASE_FLAGS ?=
RELEASE_COMPILE = -Xswiftc -Xfrontend -Xswiftc -function-sections
RELEASE_LINK = -Xswiftc -use-ld=lld -Xlinker --symbol-ordering-file=$(CURDIR)/bench/hot-functions.txt -Xlinker --no-warn-symbol-ordering
release: deps
	@bin=$$($(SWIFT) build -c release --show-bin-path); stamp=.build/release-compile-flags; \
	if [ "$$(cat $$stamp 2>/dev/null)" != "$(RELEASE_COMPILE)" ]; then \
	  rm -rf "$$bin" && mkdir -p .build && echo "$(RELEASE_COMPILE)" > $$stamp; \
	elif [ bench/hot-functions.txt -nt "$$bin/flowbridge" ]; then \
	  rm -f "$$bin/flowbridge"; \
	fi
	$(SWIFT) build -c release --static-swift-stdlib --product flowbridge $(RELEASE_COMPILE) $(RELEASE_LINK) $(RELEASE_FLAGS)

## deb: flowbridge_<version>_<arch>.deb from the release build (packaging/deb.sh): the binary, the
## systemd unit, the example config as a conffile, the docs and device examples, the man pages
## made from `flowbridge help` and Config/flowbridge.yaml; dependencies from dpkg-shlibdeps and
## libcurl's shlibs (it is opened with dlopen), checked against what the binary loads
## (scripts/runtime-packages.sh); lintian must report no error.
deb: release
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(DEB_BUILD_PACKAGES)"
	packaging/deb.sh .build/release/flowbridge .build/deb

## package-check: the package in a clean Debian bookworm root (packaging/package-check.sh):
## apt-get install pulls its dependencies, then --version, check, systemd-analyze verify, a
## dry run that prints a push from a mosquitto on loopback, and purges. Needs root.
package-check: deb
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(PACKAGE_CHECK_PACKAGES)"
	packaging/package-check.sh $(DEB) $(PACKAGING_WORK)

## image: the container image (deploy/Dockerfile) from the package, built by podman onto the
## clean Debian root imported as its base (packaging/image.sh); then the image is mounted and its
## binary runs --version and check inside it (chroot), and its size is said. Needs root.
image: deb
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(IMAGE_PACKAGES)"
	packaging/image.sh $(DEB) $(IMAGE) $(PACKAGING_WORK)

## addon: the Home Assistant add-on's folder, .build/addon/flowbridge (packaging/addon.sh): the
## add-on with its Dockerfile (deploy/Dockerfile's stages and its own lines) and the sources, from
## which Home Assistant builds it on the device. Needs git, not Swift.
addon:
	packaging/addon.sh .build/addon/flowbridge

## bench: the ingest benchmark (bench/run.sh): flowbridge beside the C floor, mqtt2prometheus and
## a paho-mqtt bridge, and with a widget API sink pushing to the widget stand-in over HTTP and
## HTTPS; interleaved rounds, medians of CPU per message, lag and memory (RSS, PSS, USS), ratios,
## where the push's memory goes by mapping, the CPU of a minute of silence, and whether each
## target is met (bench/NOTES.md); then the same readings at a home's pace, one at a time
## (bench/paced.sh, BENCH_PACES): CPU and wake-ups per reading against the floor's, on one broker;
## then bench-hostile.
bench: release
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build --product WidgetStandIn
	bench/run.sh .build/release/flowbridge $(BENCH_MESSAGES) $(BENCH_ROUNDS) $(BENCH_IDLE_SECONDS) \
	  "$$($(SWIFT) build --show-bin-path)/WidgetStandIn"
	bench/paced.sh .build/release/flowbridge $(BENCH_ROUNDS) $(BENCH_PACES)
	@$(MAKE) --no-print-directory bench-hostile

## bench-hostile: the readings' lag and the pushes while hostile clients hammer the window
## (bench/hostile.sh): readings at a home's pace (BENCH_HOSTILE_RATE a second), each a push on
## standard output, each one's lag from its publish to its push; BENCH_ROUNDS rounds of
## BENCH_HOSTILE_SECONDS quiet, then as long with 1,000 idle connections, clients sending a byte a
## second, 100 MB requests, `..` paths, odd methods and wrong credentials all at once. Per phase:
## readings, pushes, the lag's median, p95 and max, the daemon's CPU, VmRSS and PSS.
bench-hostile: release
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_PACKAGES)"
	bench/hostile.sh .build/release/flowbridge $(BENCH_ROUNDS) $(BENCH_HOSTILE_SECONDS) $(BENCH_HOSTILE_RATE)

## sd-writes: what the demo home costs an SD card, state and day book together: the daemon's own
## write_bytes (/proc/PID/io) and its fsync/fdatasync calls (strace) over SD_SECONDS of
## Config/demo.yaml against the simulator at 1x, scaled to a day (bench/sd-writes.sh).
SD_SECONDS ?= 960
sd-writes: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_PACKAGES)"
	bench/sd-writes.sh $(FLOWBRIDGE) $(SD_SECONDS)

## screenshot: the bundled day (Tests/Fixtures/home-day.*) through `replay --svg` and `render`, and
## the demo's widget over a simulated day (`simulate --trace`, then `replay --svg` on Config/demo.yaml),
## each picture screenshotted by headless Chromium and checked not to be blank (scripts/screenshot.sh).
## (DemoPictureTests checks that the demo's pictures name every node of Config/demo.yaml.)
screenshot: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(SCREENSHOT_PACKAGES)"
	rm -rf $(SCREENSHOTS) && mkdir -p $(SCREENSHOTS)
	$(FLOWBRIDGE) replay --config Tests/Fixtures/home-day.yaml \
	  --state $(SCREENSHOTS)/state.json --svg $(SCREENSHOTS)/replay Tests/Fixtures/home-day.ndjson >/dev/null
	$(FLOWBRIDGE) render --config Tests/Fixtures/home-day.yaml \
	  --state $(SCREENSHOTS)/state.json --out $(SCREENSHOTS)/render
	$(FLOWBRIDGE) simulate --trace $(SCREENSHOTS)/demo-day.ndjson --date 2026-06-21 --speed 60
	$(FLOWBRIDGE) replay --config Config/demo.yaml --svg $(SCREENSHOTS)/demo $(SCREENSHOTS)/demo-day.ndjson >/dev/null
	scripts/screenshot.sh $(SCREENSHOTS)

## ha-check: a real Home Assistant core (2025.4.4 on Python 3.13, else 2024.3.3; the pinned
## tools/ha-check/requirements-<release>.txt) discovers flowbridge's sensors and takes them for its
## Energy dashboard, the grid's costs from flowbridge's money and price sensors too: a private
## mosquitto on loopback, the simulator at 720x, `flowbridge run` with Config/demo.yaml plus a tariff
## and output.mqtt, checked through Home Assistant's REST and websocket APIs
## (tools/ha-check/ha_check.py). Not part of `make test`: it installs Home Assistant (minutes, once;
## again when the pins change), starts it (a minute or two) and waits for its statistics (up to 5 min).
ha-check: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(HA_CHECK_PACKAGES)"
	@test -f $(HA_REQUIREMENTS) || { echo "error: HA_VERSION=$(HA_VERSION): no pinned set $(HA_REQUIREMENTS) (there are: $(patsubst tools/ha-check/requirements-%.txt,%,$(wildcard tools/ha-check/requirements-*.txt)))" >&2; exit 1; }
	@test -n "$(HA_PYTHON)" || { echo "error: Home Assistant $(HA_VERSION) needs Python 3.13, and none was found (HA_PYTHON313=/path/to/python3.13 names one)" >&2; exit 1; }
	@if [ -z "$(HA_PYTHON313)" ]; then echo "ha-check: no Python 3.13 found (pyenv's under $(HA_PYENV_ROOT), or the system's; HA_PYTHON313 names one): Home Assistant 2024.3.3 instead of 2025.4.4"; fi
	@echo "ha-check: Home Assistant $(HA_VERSION) on $(HA_PYTHON) ($$($(HA_PYTHON) --version 2>&1)), in $(HA_VENV)"
	@if ! { cat $(HA_REQUIREMENTS); echo "# $(HA_PYTHON)"; } | cmp -s - $(HA_VENV)/installed; then \
	  echo "installing Home Assistant core $(HA_VERSION) into $(HA_VENV)"; \
	  rm -rf $(HA_VENV) && $(HA_PYTHON) -m venv $(HA_VENV) \
	  && $(HA_VENV)/bin/pip install --quiet --disable-pip-version-check -r $(HA_REQUIREMENTS) \
	  && { cat $(HA_REQUIREMENTS); echo "# $(HA_PYTHON)"; } > $(HA_VENV)/installed; \
	fi
	$(HA_VENV)/bin/python tools/ha-check/ha_check.py --flowbridge $$($(SWIFT) build --show-bin-path)/flowbridge

## soak: one simulated day at 240x through a private mosquitto and the widget stand-in, with
## faults (API errors, an outage, broker restarts, kill -9 of flowbridge at drawn moments) and a
## price feed; the widget's document and the state's import cost must equal a fault-free replay of
## the day, and the daemon's memory stay flat (scripts/soak.py). SOAK_SPEED, SOAK_CYCLE,
## SOAK_DATE, SOAK_SEED, SOAK_KILLS, SOAK_PRICE_HOURS and SOAK_RSS_GROWTH_KB change it. Minutes; not in `make test`.
soak: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(SOAK_PACKAGES)"
	$(SWIFT) build -c release --product flowbridge
	$(SWIFT) build -c release --product WidgetStandIn
	scripts/soak.py $$($(SWIFT) build -c release --show-bin-path)/flowbridge $$($(SWIFT) build -c release --show-bin-path)/WidgetStandIn

## fuzz: each fuzz target (Fuzz/) under libFuzzer with AddressSanitizer for FUZZ_SECONDS, from the
## committed corpus (scripts/fuzz.sh); a finding fails it and is kept under .build/fuzz/findings.
fuzz: deps
	FUZZ_SECONDS="$(FUZZ_SECONDS)" FUZZ_TARGETS="$(FUZZ_TARGETS)" SWIFT="$(SWIFT)" scripts/fuzz.sh

## fuzz-seeds: writes the seeds made from Tests/Fixtures/devices.json and a fixed random seed.
fuzz-seeds:
	scripts/fuzz-seeds.py

clean:
	rm -rf .build
