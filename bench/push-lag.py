#!/usr/bin/env python3
"""Each reading's lag from its publish to its push on flowbridge's standard output (bench/hostile.sh).

  push-lag.py stamp OUT
      reads flowbridge's standard output (a pipe) and writes each line to OUT as it comes, after the
      moment it was read: "<CLOCK_MONOTONIC seconds> <line>". The clock is meterpub's (-s STAMPS).

  push-lag.py report PUSHES PHASES
      PHASES has a line per phase: "ROUND KIND STAMPS CPU_SECONDS VMRSS_KB PSS_KB USS_KB LOAD1 LOAD5 LOAD15",
      STAMPS meterpub's stamps of that phase. Each reading (its slot and its value, distinct within a
      phase) is found again in the first push at or after its publish whose node of that slot has
      that rate: solar the first input, battery the storage, grid the exchange. Prints a line per
      phase, then each kind's readings pooled over its rounds, and whether the targets are met.
"""
import bisect
import json
import math
import os
import statistics
import sys
import time

# Where each of meterpub's slots shows in a push of bench/bench.yaml's widget.
SLOTS = {
    "solar": lambda flow: (flow.get("inputs") or [{}])[0],
    "battery": lambda flow: flow.get("storage") or {},
    "grid": lambda flow: flow.get("exchange") or {},
}


def stamp(path):
    """Stamps each line with the moment its bytes were read (not when Python's buffer filled)."""
    with open(path, "wb", buffering=0) as out:
        pending = b""
        while chunk := os.read(0, 65536):
            now = b"%.6f " % time.monotonic()
            *lines, pending = (pending + chunk).split(b"\n")
            if lines:
                out.write(b"".join(now + line + b"\n" for line in lines))


def pushes(path):
    """[(seconds, {(slot, watts)})] of every push line, in order."""
    result = []
    for line in open(path, "rb"):
        seconds, _, text = line.partition(b" ")
        try:
            flow = json.loads(text)["patch"]["content"].get("flow") or {}
        except (ValueError, KeyError, AttributeError):
            continue  # not a push line
        keys = set()
        for slot, node in SLOTS.items():
            rate = node(flow).get("rate")
            if isinstance(rate, (int, float)):
                keys.add((slot, round(abs(rate))))
        result.append((float(seconds), keys))
    return result


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)] if ordered else float("nan")


def measure(stamps, seen):
    """(readings, pushes in the phase, [lag ms of each reading pushed], readings never pushed)."""
    readings = [(float(t), slot, int(watts)) for t, slot, watts in (line.split() for line in open(stamps))]
    times = {}
    for seconds, keys in seen:
        for key in keys:
            times.setdefault(key, []).append(seconds)
    lags, missing, end = [], 0, readings[-1][0]
    for published, slot, watts in readings:
        candidates = times.get((slot, watts), [])
        index = bisect.bisect_left(candidates, published)
        if index == len(candidates):
            missing += 1
            continue
        lags.append((candidates[index] - published) * 1000)
        end = max(end, candidates[index])
    count = sum(1 for seconds, _ in seen if readings[0][0] <= seconds <= end)
    return len(readings), count, lags, missing


def report(pushes_path, phases_path):
    seen = pushes(pushes_path)
    kinds = {}
    print(f"  {'round':>5} {'phase':8} {'readings':>8} {'pushes':>7} {'unpushed':>8} {'lag median':>10} {'p95':>9} "
          f"{'max':>9} {'CPU':>7} {'VmRSS':>9} {'PSS':>9} {'USS':>9}  load")
    for line in open(phases_path):
        round_, kind, stamps, cpu, rss, pss, uss, *load = line.split()
        readings, count, lags, missing = measure(stamps, seen)
        row = kinds.setdefault(kind, {"readings": 0, "pushes": 0, "missing": 0, "lags": [], "cpu": [], "rss": [], "pss": [], "uss": []})
        row["readings"] += readings
        row["pushes"] += count
        row["missing"] += missing
        row["lags"] += lags
        row["cpu"].append(float(cpu))
        row["rss"].append(int(rss))
        row["pss"].append(int(pss))
        row["uss"].append(int(uss))
        print(f"  {round_:>5} {kind:8} {readings:8d} {count:7d} {missing:8d} {statistics.median(lags):7.1f} ms "
              f"{percentile(lags, 0.95):6.1f} ms {max(lags):6.1f} ms {float(cpu):5.2f} s {int(rss) / 1024:6.1f} MB "
              f"{int(pss) / 1024:6.1f} MB {int(uss) / 1024:6.1f} MB  {' '.join(load)}")
    print()
    print("pooled over the rounds (memory: at the end of each phase, the largest; CPU: the daemon's, the median phase):")
    for kind, row in kinds.items():
        lags = row["lags"]
        print(f"  {kind:8} {row['readings']} readings, {row['pushes']} pushes, {row['missing']} never pushed; "
              f"lag median {statistics.median(lags):.1f} ms, p95 {percentile(lags, 0.95):.1f} ms, max {max(lags):.1f} ms; "
              f"CPU {statistics.median(row['cpu']):.2f} s; VmRSS {max(row['rss']) / 1024:.1f} MB, PSS {max(row['pss']) / 1024:.1f} MB, "
              f"USS {max(row['uss']) / 1024:.1f} MB")
    quiet, hostile = kinds.get("quiet"), kinds.get("hostile")
    if not (quiet and hostile):
        return
    p95 = percentile(quiet["lags"], 0.95), percentile(hostile["lags"], 0.95)
    # Private pages: PSS moves with whoever else maps the same libraries (other flowbridges, builds).
    # The bound is the listener's: 64 connections of 32 KiB is 2 MB; as much again for its arena.
    growth = (max(hostile["uss"]) - max(quiet["uss"])) / 1024
    checks = [
        (f"every reading pushed under the hostile clients as in quiet: {hostile['missing']} and {quiet['missing']} never pushed",
         hostile["missing"] == 0 and quiet["missing"] == 0),
        (f"lag p95 under the hostile clients <= twice the quiet's + 5 ms: {p95[1]:.1f} ms against {p95[0]:.1f} ms",
         p95[1] <= 2 * p95[0] + 5),
        (f"USS under the hostile clients <= the quiet's + 4 MB: {growth:+.1f} MB", growth <= 4),
    ]
    print()
    for text, ok in checks:
        print(f"  {'met ' if ok else 'MISS'} {text}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "stamp":
        stamp(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
