#!/usr/bin/env bash
# flowbridge's ingest benchmark: flowbridge beside the C floor (mosquitto_sub), mqtt2prometheus (Go)
# and a paho-mqtt Python bridge, and flowbridge again with a widget API sink pushing to the widget
# stand-in (Tests/WidgetStandIn) on loopback, over HTTP and over HTTPS; every flowbridge with its
# window on, scraped every 15 s (bench/flowbridge-consumer.sh). ROUNDS interleaved rounds of
# N messages each (bench/ingest.sh), then IDLE_SECONDS of silence for every consumer at once (CPU
# while idle, connected). Prints each run, a table of medians (CPU per message, lag, and RSS, PSS
# and USS once the sentinel is through), flowbridge's ratios against the floor and mqtt2prometheus,
# where the push's memory goes (the last round's flowbridge against flowbridge+push and +https, by
# mapping: bench/smaps.py), and whether each target is met.
# usage: bench/run.sh FLOWBRIDGE_BINARY [N] [ROUNDS] [IDLE_SECONDS] [STAND_IN_BINARY]
#   (STAND_IN_BINARY defaults to .build/debug/WidgetStandIn: `swift build --product WidgetStandIn`)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
n=${2:-150000} rounds=${3:-3} idle=${4:-60}
standin=${5:-$here/../.build/debug/WidgetStandIn}
[ -x "$standin" ] || { echo "no widget stand-in at $standin (swift build --product WidgetStandIn)" >&2; exit 1; }
standin=$(cd "$(dirname "$standin")" && pwd)/$(basename "$standin")
export BENCH_BIN=$(mktemp -d /tmp/flowbridge-bench-bin-XXXXXX)
export BENCH_TOKEN=bench-token
standins=()
trap 'for pid in "${standins[@]}"; do kill $pid 2>/dev/null; done; rm -rf "$BENCH_BIN"' EXIT
gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$BENCH_BIN/meterpub" "$here/meterpub.c" -lmosquitto -lm
# paho-mqtt in a throwaway virtual environment: nothing is installed into the system's Python.
python3 -m venv "$BENCH_BIN/venv"
"$BENCH_BIN/venv/bin/pip" install --quiet --disable-pip-version-check 'paho-mqtt>=2,<3'
# The libraries of the brokers and the consumers (flowbridge's, libcurl's, mosquitto's), glibc's
# aside, as private copies that ingest.sh puts on their LD_LIBRARY_PATH: no process outside the
# benchmark (on a build machine, the compiler maps libcurl and OpenSSL too) shares their pages and
# lowers the consumers' PSS. The PSS is then that of a machine of their own, such as a Raspberry Pi
# with its broker. Synced before use: a page of a file not yet written back counts as dirty.
export BENCH_LIBS=$BENCH_BIN/lib
mkdir "$BENCH_LIBS"
libcurl=$(/sbin/ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')
for object in "$binary" "$libcurl" "$(command -v mosquitto)" "$(command -v mosquitto_sub)"; do ldd "$object"; done \
  | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
  | grep -vE '/(libc|libm|libmvec|libresolv|libpthread|libdl|librt|libutil|ld-linux[^/]*)\.so' \
  | while read -r library; do cp -L "$library" "$BENCH_LIBS/"; done
cp -L "$libcurl" "$BENCH_LIBS/"
sync "$BENCH_LIBS"/*
# The widget API: the stand-in on a free loopback port for the whole benchmark, over HTTP, and a
# second one over HTTPS with a certificate for 127.0.0.1 (flowbridge verifies it against it).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$BENCH_BIN/key.pem" -out "$BENCH_BIN/cert.pem" 2> /dev/null
start_standin() {  # LOG [--tls CERT KEY]: returns once it listens (its address is in LOG)
  "$standin" --token "$BENCH_TOKEN" --path /widgets/bench "${@:2}" > "$1" 2>&1 & standins+=($!)
  until grep -q '^listening on' "$1"; do sleep 0.05; done
}
start_standin "$BENCH_BIN/stand-in.log"
start_standin "$BENCH_BIN/stand-in-tls.log" --tls "$BENCH_BIN/cert.pem" "$BENCH_BIN/key.pem"
url="http://$(sed -n 's/^listening on //p' "$BENCH_BIN/stand-in.log")/widgets/bench"
tls_url="https://$(sed -n 's/^listening on //p' "$BENCH_BIN/stand-in-tls.log")/widgets/bench"

names=(floor mqtt2prometheus paho flowbridge flowbridge+push flowbridge+https)
commands=(
  "mosquitto_sub -p {PORT} -q 1 -t bench/meter/#"
  "$here/m2p.sh {PORT} {PORT2}"
  "$BENCH_BIN/venv/bin/python $here/paho_bridge.py {PORT}"
  "$here/flowbridge-consumer.sh $binary {PORT} {PORT2}"
  "$here/flowbridge-consumer.sh $binary {PORT} {PORT2} $url"
  "$here/flowbridge-consumer.sh $binary {PORT} {PORT2} $tls_url $BENCH_BIN/cert.pem"
)
probes=("" "curl -s 127.0.0.1:{PORT2}/metrics | grep -q 424242" "" "" "" "")
results=$BENCH_BIN/results
for round in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    SMAPS=$BENCH_BIN/smaps-${names[$i]} PROBE=${probes[$i]} "$here/ingest.sh" "${names[$i]}" "$n" "${commands[$i]}" | tee -a "$results"
  done
done
echo "idle: $idle s of silence, all consumers at once"
idlers=()
for i in "${!names[@]}"; do
  IDLE=$idle PROBE=${probes[$i]} "$here/ingest.sh" "${names[$i]}" 300 "${commands[$i]}" > "$BENCH_BIN/idle-$i" & idlers+=($!)
done
wait "${idlers[@]}"  # not the stand-ins
cat "$BENCH_BIN"/idle-* | tee -a "$results" | sed 's/^/  /'
echo
echo "where the push's memory goes (the last round's flowbridge+push against flowbridge, by mapping):"
"$here/smaps.py" "$BENCH_BIN/smaps-flowbridge" "$BENCH_BIN/smaps-flowbridge+push" 15
echo "and what HTTPS adds (flowbridge+https against flowbridge+push):"
"$here/smaps.py" "$BENCH_BIN/smaps-flowbridge+push" "$BENCH_BIN/smaps-flowbridge+https" 6
echo
python3 - "$results" "$n" "$rounds" "$idle" <<'PY'
import re, statistics, sys
runs, idle = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+): ([\d.]+) us CPU/msg, publish [\d.]+ s, lag after publish (-?\d+) ms, "
                 r"RSS (\d+) KB, PSS (\d+) KB, USS (\d+) KB, idle CPU (\S+) s", line)
    if not m:
        continue
    if m[7] != "-":
        idle[m[1]] = float(m[7])
    else:
        runs.setdefault(m[1], []).append([float(m[i]) for i in range(2, 7)])
# name: [CPU µs/msg, lag ms, RSS, PSS, USS (kB)], each the median of the rounds
median = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in runs.items()}
print(f"medians of {sys.argv[3]} interleaved rounds of {sys.argv[2]} messages (CPU time per message is the stable figure;")
print("memory once the sentinel is through, the libraries private to the benchmark):")
print(f"  {'consumer':16} {'CPU/msg':>9} {'lag':>9} {'RSS':>8} {'PSS':>8} {'USS':>8} {'idle CPU':>9}")
for name, (cpu, lag, rss, pss, uss) in median.items():
    print(f"  {name:16} {cpu:7.2f}µs {lag:6.0f} ms {rss / 1024:5.1f} MB {pss / 1024:5.1f} MB {uss / 1024:5.1f} MB"
          f" {idle.get(name, float('nan')):7.2f} s")
print()
for mine in ("flowbridge", "flowbridge+push", "flowbridge+https"):
    for other in ("floor", "mqtt2prometheus"):
        a, b = median[mine], median[other]
        print(f"  {mine:16} / {other:15} CPU {a[0] / b[0]:.2f}x   PSS {a[3] / b[3]:.2f}x   RSS {a[2] / b[2]:.2f}x")
fb, floor, m2p = (median[k] for k in ("flowbridge", "floor", "mqtt2prometheus"))
def memory(name):
    return f"PSS {median[name][3] / 1024:.1f} MB (RSS {median[name][2] / 1024:.1f} MB)"
checks = [
    (f"CPU per message <= 1.5x the floor: {fb[0] / floor[0]:.2f}x", fb[0] <= 1.5 * floor[0]),
    (f"lag after the last publish <= 20 ms: {fb[1]:.0f} ms", fb[1] <= 20),
] + [
    (f"PSS with the widget API sink over {how} <= mqtt2prometheus's: {memory(name)} against {memory('mqtt2prometheus')}",
     median[name][3] <= m2p[3])
    for name, how in (("flowbridge+push", "HTTP"), ("flowbridge+https", "HTTPS"))
] + [
    (f"CPU while idle for {sys.argv[4]} s < 0.05 s",
     all(idle.get(k, 1) < 0.05 for k in ("flowbridge", "flowbridge+push", "flowbridge+https"))),
]
print()
for text, ok in checks:
    print(f"  {'met ' if ok else 'MISS'} {text}")
PY
