#!/usr/bin/env python3
"""The benchmark's Python anchor: the bridge a Home Assistant user would write by hand with
paho-mqtt. It subscribes to bench/meter/#, keeps a flow document (solar, battery, grid and the
derived home) and prints the RFC 7396 merge patch of every change as one JSON line."""
import json
import sys

import paho.mqtt.client as mqtt

readings = {}
shown = {}


def merge_patch(old, new):
    """The smallest merge patch from old to new (objects recurse, the rest is replaced)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value)
    return patch


def on_message(client, userdata, message):
    global shown
    try:
        power = json.loads(message.payload)["power"]
    except (ValueError, KeyError, TypeError):
        return
    readings[message.topic.rsplit("/", 1)[-1]] = float(power)
    solar, battery, grid = (readings.get(k, 0.0) for k in ("solar", "battery", "grid"))
    document = {"template": "flow", "unit": "W", "flow": {
        "inputs": [{"name": "Solar", "rate": round(solar)}],
        "storage": {"name": "Battery", "rate": round(battery)},
        "exchange": {"name": "Grid", "rate": round(grid)},
        "output": {"name": "Home", "rate": round(max(0.0, solar + grid - battery))},
    }}
    patch = merge_patch(shown, document)
    if patch:
        sys.stdout.write(json.dumps({"content": patch}, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    shown = document


client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
client.on_message = on_message
client.connect("127.0.0.1", int(sys.argv[1]))
client.subscribe("bench/meter/#", qos=1)
client.loop_forever()
