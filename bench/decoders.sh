#!/usr/bin/env bash
# The payload decoders' CPU per message (ns), each on a payload of its kind: FlowCore's sources
# and bench/decoder-bench.swift compiled into one optimized module (FlowCore is pure Swift, so
# nothing else is needed), then run for N messages per decoder.
# usage: bench/decoders.sh [N]   (default 1000000)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/flowbridge-decoder-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT
swiftc -O -wmo -parse-as-library -package-name flowbridge -module-name DecoderBench -o "$out/decoder-bench" \
  "$here"/../Sources/FlowCore/*/*.swift "$here/decoder-bench.swift"
"$out/decoder-bench" "${1:-1000000}"
