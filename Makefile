# flowbridge: build, test and benchmark. Every target installs the Debian packages it needs first,
# so a machine that has only Swift can run `make test`.

SWIFT ?= swift
# Debian packages the build, the tests and the benchmark need.
DEB_PACKAGES := pkg-config libmosquitto-dev libcurl4-openssl-dev libyaml-dev libssl-dev \
                mosquitto mosquitto-clients openssl tzdata systemd
# And what the ingest benchmark needs besides.
BENCH_PACKAGES := gcc bc curl python3 python3-pip

# The shared benchmark harness, beside the repository.
SHARED ?= ../shared
BENCH_MESSAGES ?= 150000
BENCH_ROUNDS ?= 3

.PHONY: deps build test release bench clean

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

## bench: the shared ingest benchmark, flowbridge beside the C floor and the paho-mqtt bridge,
## interleaved rounds, medians and ratios (see bench/run.sh).
bench: release
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_PACKAGES)"
	@python3 -c 'import paho.mqtt.client as m; m.CallbackAPIVersion' 2>/dev/null \
	  || python3 -m pip install --quiet 'paho-mqtt>=2' \
	  || python3 -m pip install --quiet --break-system-packages 'paho-mqtt>=2'
	bench/run.sh $(SHARED)/bench .build/release/flowbridge $(BENCH_MESSAGES) $(BENCH_ROUNDS)

clean:
	rm -rf .build
