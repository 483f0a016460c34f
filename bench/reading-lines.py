#!/usr/bin/env python3
"""Lines and pages of code and data each reading touches, from a trace of valgrind's lackey.

The trace (--trace-mem=yes) has a line per instruction ("I  ADDRESS,SIZE") and per data access
(" L", " S", " M": load, store, modify), in the order valgrind ran them, all threads in one. It is
cut into stretches where the instruction at MARKER (the function every message arrives by) runs:
a stretch is one reading and whatever its threads did until the next arrived. Each stretch's
distinct 64-byte lines and 4 kB pages, of code and of data, are counted; the medians are taken over
the stretches but the first tenth (the connection, the first pushes) and the last five (the
sentinel, the stop). The means over the same stretches follow: the paced benchmark's CPU per
reading is a mean, and it holds what one reading in so many does besides its own work (the
clock's beat, once a second, taken by the reading that comes when it is due), which the median
leaves out.

A reading must have come alone for its stretch to be one reading's: with every reading pushed, the
daemon's pushes (PUSHES, the lines it printed) must be about as many as the readings (N); fewer,
and lackey's daemon fell behind and took readings as a backlog, which this refuses to count.

usage: bench/reading-lines.py TRACE MARKER_HEX N PUSHES POLICY
"""
import statistics
import sys

trace, marker, readings, pushes, policy = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if policy == "pushed" and pushes < readings * 0.95:
    sys.exit(f"{pushes} pushes for {readings} readings: the daemon took a backlog; a slower RATE")

stretches = []
code, data = set(), set()
instructions = 0
for line in open(trace, errors="replace"):
    kind = line[:2]
    if kind == "I ":
        address = int(line[3:line.index(",")], 16)
        if address == marker:
            stretches.append((len(code), len({l >> 6 for l in code}), len(data), len({l >> 6 for l in data}), instructions))
            code, data, instructions = set(), set(), 0
        code.add(address >> 6)
        instructions += 1
    elif kind in (" L", " S", " M"):
        data.add(int(line[3:line.index(",")], 16) >> 6)
# The first stretch is the start, before the first reading.
stretches = stretches[1:]
if len(stretches) < readings:
    sys.exit(f"{len(stretches)} arrivals found for {readings} readings: the marker is not where the trace has it")
kept = stretches[len(stretches) // 10:-5]
if not kept:
    sys.exit(f"{readings} readings leave none to count once the first tenth and the last five are set aside: a larger N")
median = [statistics.median(stretch[field] for stretch in kept) for field in range(5)]
mean = [statistics.mean(stretch[field] for stretch in kept) for field in range(5)]
print(
    f"lines per reading: code {median[0]:.0f} in {median[1]:.0f} pages, data {median[2]:.0f} in {median[3]:.0f} pages "
    f"({median[4]:.0f} instructions; medians of {len(kept)} readings, {policy} policy); "
    f"means: code {mean[0]:.0f}, data {mean[2]:.0f}, {mean[4]:.0f} instructions"
)
