#!/bin/sh
# flowbridge in the ingest benchmark: bench/bench.yaml (the three bench topics onto solar, storage
# and exchange; stdout; 1 W steps, no deadband, no interval, no settling) for the broker's port,
# run from the release binary as a dry run. Its window listens on WINDOW_PORT and is scraped as
# Prometheus would: /metrics once it answers, then every 15 s while flowbridge runs (the scraper
# is curl in a loop beside it, not counted in flowbridge's CPU or memory). With PUSH_URL, a widget
# API sink as well: the widget pushed to PUSH_URL (token in $BENCH_TOKEN; the server's certificate
# verified against CA_FILE, for an https URL) and printed on standard output (which the benchmark
# watches for its sentinel), in a real run.
# usage: flowbridge-consumer.sh BINARY PORT WINDOW_PORT [PUSH_URL [CA_FILE]]
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
dir=$(mktemp -d "${BENCH_BIN:-/tmp}/flowbridge-consumer-XXXXXX")  # run.sh removes its BENCH_BIN
bench_config "$2" "$dir/state.json" "$3" > "$dir/config.yaml"
# The scraper: this shell's process is flowbridge's after the exec below; it ends with it.
metrics="http://127.0.0.1:$3/metrics"
flowbridge=$$
(
  until curl -sf -o /dev/null "$metrics"; do kill -0 $flowbridge 2>/dev/null || exit 0; sleep 0.1; done
  while sleep 15 && kill -0 $flowbridge 2>/dev/null; do curl -s -o /dev/null "$metrics" || true; done
) > /dev/null 2>&1 &
if [ $# -lt 4 ]; then
  exec "$1" run --config "$dir/config.yaml" --dry-run --log-level warning
fi
printf '    push: {url: "%s", token_env: BENCH_TOKEN%s}\noutput: {stdout: true}\n' "$4" "${5:+, ca_file: \"$5\"}" >> "$dir/config.yaml"
exec "$1" run --config "$dir/config.yaml" --log-level warning
