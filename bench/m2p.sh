#!/bin/sh
# mqtt2prometheus for the ingest benchmark (its config on standard input, so exec leaves one process
# for the benchmark to measure). usage: m2p.sh BROKER_PORT METRICS_PORT
set -eu
exec prometheus-mqtt-exporter -config /dev/stdin -listen-address 127.0.0.1 -listen-port "$2" -log-level error <<EOF2
$(sed "s/@PORT@/$1/" "$(dirname "$0")/m2p.yaml")
EOF2
