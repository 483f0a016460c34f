#!/usr/bin/env bash
# make fuzz: every fuzz target under libFuzzer for a bounded time, then one line of figures each.
#
#   scripts/fuzz.sh                      # FUZZ_SECONDS=60 per target, all targets
#   FUZZ_SECONDS=600 FUZZ_TARGETS="Config" scripts/fuzz.sh
#
# The targets (Fuzz/<Target>Fuzzer, their properties in Fuzz/FuzzChecks) are built with
# -sanitize=fuzzer,address and -DFUZZING in a build folder of their own (.build/fuzz), so the
# normal build is left alone. libFuzzer starts from the committed corpus (Fuzz/Corpus/<Target>,
# and the shipped configs in Config/ for the config loader), which it only reads; what it learns
# goes to .build/fuzz/corpus/<Target>. A finding (a crash, a violated property, a leak, a
# timeout) is written to .build/fuzz/findings/<Target>/ and makes the run fail: copy the file into
# Fuzz/Corpus/<Target>/ and `swift test --filter FuzzCorpusTests` replays it from then on.
set -uo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"PayloadDecoder Config MergePatch"}
scratch=.build/fuzz
# The same input draws the same documents in every process (Swift seeds its hashing per process).
export SWIFT_DETERMINISTIC_HASHING=1
# libFuzzer and AddressSanitizer report a crash; Swift's own backtracer would fight them over it.
export SWIFT_BACKTRACE=enable=no
# The linker Swift uses by default (gold) fails on the sanitizers' objects; the toolchain's lld does not.
flags=(-c debug --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
       -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld)

for target in $targets; do
  "$SWIFT" build "${flags[@]}" --product "${target}Fuzzer" || exit 1
done
bin=$("$SWIFT" build "${flags[@]}" --show-bin-path)

summary=()
failed=0
for target in $targets; do
  work="$scratch/corpus/$target"
  findings="$scratch/findings/$target"
  log="$scratch/$target.log"
  mkdir -p "$work" "$findings"
  mapfile -t seeds < <("$bin/${target}Fuzzer" --seed-folders)
  dict=()
  [ -f "Fuzz/$target.dict" ] && dict=(-dict="Fuzz/$target.dict")
  before=$(find "$findings" -type f | wc -l)
  echo "== $target: ${seconds}s from ${seeds[*]}"
  # The time limit is libFuzzer's own; the timeout only catches a fuzzer that hangs on its way out.
  timeout -s KILL $((seconds + 300)) "$bin/${target}Fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$findings/" "${dict[@]}" "$work" "${seeds[@]}" >"$log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[^ ]*\).*/\1/p' <<<"$last")
  new=$(( $(find "$findings" -type f | wc -l) - before ))
  summary+=("$(printf '%-15s %10s runs  cov %6s  ft %7s  corpus %-12s  findings %s' "$target" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$new")")
  if [ "$status" -ne 0 ] || [ "$new" -ne 0 ]; then
    failed=1
    echo "!! $target: exit $status; the log is $log, findings in $findings/:"
    grep -E "^(==[0-9]+==ERROR|SUMMARY|$target: |Fatal error|Test unit written)" "$log" | head -20
  fi
done

echo
echo "fuzz: ${seconds}s per target"
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED (copy each finding into Fuzz/Corpus/<Target>/ as a regression test, then fix it)"
  exit 1
fi
echo "fuzz: no findings"
