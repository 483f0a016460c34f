#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets that are made, not copied: make fuzz-seeds.

Fuzz/Corpus/PayloadDecoder/seed-*: every payload of Tests/Fixtures/devices.json with the json path
its case names (input: a flag byte, bit 0 a path up to a newline, bit 1 decimal_comma; then the
payload), and the shapes the README promises to read (quoted numbers, decimal commas, the words
for no reading, paths with quoted and empty keys), and the price schedules of
Tests/Fixtures/price-schedules.json.
Fuzz/Corpus/MergePatch/seed-*: byte strings of several lengths from a fixed seed (every byte
string is an input: MergePatchProperty draws its documents from them).
The config loader's seeds are the shipped configs in Config/ and the files in Fuzz/Corpus/Config.
Inputs that once failed (crash-*) are kept beside the seeds and are never rewritten here.
"""
import json
import os
import random
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(folder, name, data):
    path = os.path.join(ROOT, "Fuzz", "Corpus", folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as out:
        out.write(data)


def decoder_input(payload, path=None, decimal_comma=False):
    flags = (1 if path is not None else 0) | (2 if decimal_comma else 0)
    head = bytes([flags]) + ((path.encode() + b"\n") if path is not None else b"")
    return head + payload.encode()


def main():
    for folder in ("PayloadDecoder", "MergePatch"):
        path = os.path.join(ROOT, "Fuzz", "Corpus", folder)
        for name in os.listdir(path) if os.path.isdir(path) else []:
            if name.startswith("seed-"):
                os.remove(os.path.join(path, name))

    with open(os.path.join(ROOT, "Tests", "Fixtures", "devices.json")) as fixtures:
        cases = json.load(fixtures)["cases"]
    seeds = []
    for case in cases:
        extract = case.get("extract", "whole payload")
        if extract == "whole payload":
            seeds.append(decoder_input(case["payload"]))
            continue
        # "ENERGY.Power (W), ENERGY.Today (kWh)" and "total_act (import) and total_act_ret (export)"
        for part in re.split(r",| and ", extract):
            seeds.append(decoder_input(case["payload"], part.strip().split(" ")[0]))
    seeds += [
        decoder_input('"19.6"'), decoder_input("500,20", decimal_comma=True), decoder_input("500,20"),
        decoder_input(" +1.2e3 \n"), decoder_input("nan"), decoder_input("None"), decoder_input(""),
        decoder_input('{"outdoorTemp":"19.6"}', "outdoorTemp"),
        decoder_input('{"em:0":{"x":-894}}', '["em:0"].x'),
        decoder_input('{"ENERGY":{"Power":[12,56]}}', "ENERGY.Power[1]"),
        decoder_input('{"":3}', '[""]'),
        decoder_input('{"value": null}', "value"),
        decoder_input('{"a":{"b":1}}', "a.b.c"),
    ]
    # The price schedules of Tests/Fixtures/price-schedules.json (read as a schedule as well as a
    # number), and one inside an object, as a path finds it.
    with open(os.path.join(ROOT, "Tests", "Fixtures", "price-schedules.json")) as fixtures:
        seeds += [decoder_input(case["payload"]) for case in json.load(fixtures)["cases"]]
    seeds.append(decoder_input('{"raw_today":[[1780315200,1780316100,0.3]]}', "raw_today"))
    for index, seed in enumerate(seeds):
        write("PayloadDecoder", f"seed-{index:02}", seed)

    generator = random.Random(7396)
    for index, length in enumerate([0, 8, 32, 64, 128, 256, 512, 1024]):
        write("MergePatch", f"seed-{index:02}", bytes(generator.randrange(256) for _ in range(length)))


if __name__ == "__main__":
    main()
