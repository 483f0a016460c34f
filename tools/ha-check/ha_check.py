#!/usr/bin/env python3
"""make ha-check: a real Home Assistant core discovers flowbridge's sensors.

Runs, all on loopback and in a temporary folder: a private mosquitto, `flowbridge simulate`
(the demo home at 720x), `flowbridge run` with Config/demo.yaml plus `output.mqtt` with Home
Assistant discovery, and Home Assistant core (the pinned set of requirements.txt, in the virtual
environment this script runs from) with a private config folder, its MQTT integration pointed at
the same broker. Then it checks through Home Assistant's REST API that every sensor flowbridge
announced is an entity with the state flowbridge published, the unit, device class and state
class of its discovery config, and the device's name; that the entities turn unavailable when
flowbridge stops (its last will); and that Home Assistant's log has no MQTT discovery or template
warnings or errors. Prints the entities as a table. Exit status 0 when all holds.

Run with the virtual environment's Python (the Makefile does):
    .build/ha-check/venv/bin/python tools/ha-check/ha_check.py --flowbridge .build/debug/flowbridge
"""

import argparse
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import jwt  # PyJWT, one of Home Assistant's own requirements
import paho.mqtt.client as mqtt  # paho-mqtt 1.6, idem
import yaml  # PyYAML, idem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DISCOVERY_PREFIX = "homeassistant"
HA_START_SECONDS = 300
LOGGERS_WATCHED = (
    "homeassistant.components.mqtt", "homeassistant.components.sensor", "homeassistant.helpers.template",
    "homeassistant.helpers.entity",
)


def say(text):
    print(f"ha-check: {text}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, seconds, process):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


class Processes:
    """The child processes, each with its output in a file; all stopped at the end."""

    def __init__(self, folder):
        self.folder = folder
        self.running = []

    def start(self, name, command):
        log = open(os.path.join(self.folder, f"{name}.log"), "wb")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.running.append((name, process))
        return process

    def log(self, name):
        with open(os.path.join(self.folder, f"{name}.log"), encoding="utf-8", errors="replace") as file:
            return file.read()

    @staticmethod
    def stop(process, seconds=30):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(seconds)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop_all(self):
        for _, process in reversed(self.running):
            self.stop(process)


def retained(port, topics, seconds=2.0):
    """The retained messages on `topics` (filters), by topic: what a subscriber gets at once."""
    found = {}
    client = mqtt.Client(client_id=f"ha-check-{uuid.uuid4().hex[:8]}")
    client.on_connect = lambda c, userdata, flags, rc: c.subscribe([(topic, 1) for topic in topics])

    def on_message(_client, _userdata, message):
        if message.retain and message.payload:
            found[message.topic] = message.payload.decode()

    client.on_message = on_message
    client.connect("127.0.0.1", port)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.loop(timeout=0.1)
    client.disconnect()
    return found


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2)


def prepare_home_assistant(folder, http_port, broker_port, version):
    """A config folder Home Assistant starts from without onboarding: HTTP on loopback, the
    MQTT integration as a config entry (the broker cannot be set in configuration.yaml since
    2022.3), and a user with a long-lived access token. Returns the token."""
    with open(os.path.join(folder, "configuration.yaml"), "w", encoding="utf-8") as file:
        file.write(
            "homeassistant:\n  name: ha-check\n  unit_system: metric\n  time_zone: UTC\n"
            "  latitude: 52.5\n  longitude: 13.4\n  elevation: 30\n  currency: EUR\n  country: DE\n"
            f"http:\n  server_host: 127.0.0.1\n  server_port: {http_port}\n"
            "api:\n"
            "logger:\n  default: warning\n  logs:\n    homeassistant.components.mqtt: info\n"
        )
    storage = os.path.join(folder, ".storage")
    write_json(os.path.join(storage, "onboarding"), {
        "version": 4, "minor_version": 1, "key": "onboarding",
        "data": {"done": ["user", "core_config", "analytics", "integration"]},
    })
    write_json(os.path.join(storage, "core.config_entries"), {
        "version": 1, "minor_version": 1, "key": "core.config_entries",
        "data": {"entries": [{
            "entry_id": uuid.uuid4().hex, "version": 1, "minor_version": 1, "domain": "mqtt", "title": "127.0.0.1",
            "data": {"broker": "127.0.0.1", "port": broker_port, "discovery": True, "discovery_prefix": DISCOVERY_PREFIX},
            "options": {}, "pref_disable_new_entities": False, "pref_disable_polling": False, "source": "user",
            "unique_id": None, "disabled_by": None,
        }]},
    })
    user_id, token_id, jwt_key = uuid.uuid4().hex, uuid.uuid4().hex, secrets.token_hex(64)
    now = datetime.datetime.now(datetime.timezone.utc)
    write_json(os.path.join(storage, "auth"), {
        "version": 1, "minor_version": 1, "key": "auth",
        "data": {
            "users": [{
                "id": user_id, "group_ids": ["system-admin"], "is_owner": True, "is_active": True, "name": "ha-check",
                "system_generated": False, "local_only": False,
            }],
            "groups": [{"id": "system-admin", "name": "Administrators"}],
            "credentials": [],
            "refresh_tokens": [{
                "id": token_id, "user_id": user_id, "client_id": None, "client_name": "ha-check", "client_icon": None,
                "token_type": "long_lived_access_token", "created_at": now.isoformat(),
                "access_token_expiration": 86400.0, "token": secrets.token_hex(64), "jwt_key": jwt_key,
                "last_used_at": None, "last_used_ip": None, "expire_at": None, "credential_id": None, "version": version,
            }],
        },
    })
    issued = int(time.time())
    return jwt.encode({"iss": token_id, "iat": issued, "exp": issued + 86400}, jwt_key, algorithm="HS256")


def api(http_port, token, path):
    request = urllib.request.Request(f"http://127.0.0.1:{http_port}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def same_state(ha_state, value):
    """Home Assistant's state text against flowbridge's value (null: unknown)."""
    if value is None:
        return ha_state == "unknown"
    try:
        return abs(float(ha_state) - float(value)) < 1e-9
    except ValueError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flowbridge", required=True, help="the flowbridge binary")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, Home Assistant's config)")
    arguments = parser.parse_args()
    flowbridge = os.path.abspath(arguments.flowbridge)
    hass = os.path.join(os.path.dirname(sys.executable), "hass")
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    from homeassistant.const import __version__ as ha_version

    folder = tempfile.mkdtemp(prefix="flowbridge-ha-check-")
    processes = Processes(folder)
    problems = []
    try:
        broker_port, http_port = free_port(), free_port()
        with open(os.path.join(folder, "mosquitto.conf"), "w", encoding="utf-8") as file:
            file.write(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        broker = processes.start("mosquitto", [mosquitto, "-c", os.path.join(folder, "mosquitto.conf")])
        if not wait_for_port(broker_port, 10, broker):
            raise SystemExit(f"mosquitto did not start:\n{processes.log('mosquitto')}")

        # Config/demo.yaml, on this broker, with its own state, and output.mqtt with discovery.
        with open(os.path.join(ROOT, "Config", "demo.yaml"), encoding="utf-8") as file:
            config = yaml.safe_load(file)
        config.setdefault("mqtt", {})["port"] = broker_port
        config["mqtt"]["host"] = "127.0.0.1"
        config["state_file"] = os.path.join(folder, "state.json")
        config.setdefault("output", {})["mqtt"] = {"home_assistant": True}
        config_path = os.path.join(folder, "flowbridge.json")
        write_json(config_path, config)
        check = subprocess.run([flowbridge, "check", "--config", config_path], capture_output=True, text=True)
        if check.returncode != 0:
            raise SystemExit(f"flowbridge check failed:\n{check.stdout}{check.stderr}")
        say(f"mosquitto on 127.0.0.1:{broker_port}; flowbridge check --config {config_path} says:")
        print(check.stdout[check.stdout.index("output: MQTT"):], end="", flush=True)

        processes.start("simulate", [flowbridge, "simulate", "--broker", f"127.0.0.1:{broker_port}", "--speed", "720"])
        daemon = processes.start("flowbridge", [flowbridge, "run", "--config", config_path])

        home = os.path.join(folder, "homeassistant")
        os.makedirs(home)
        token = prepare_home_assistant(home, http_port, broker_port, ha_version)
        say(f"starting Home Assistant {ha_version} on 127.0.0.1:{http_port} (the first start takes a minute or two)")
        started = time.monotonic()
        hass_process = processes.start("hass", [hass, "-c", home, "--skip-pip"])
        while True:
            if hass_process.poll() is not None:
                raise SystemExit(f"Home Assistant exited ({hass_process.returncode}):\n{processes.log('hass')[-4000:]}")
            if time.monotonic() - started > HA_START_SECONDS:
                raise SystemExit(f"Home Assistant's API did not answer in {HA_START_SECONDS} s:\n{processes.log('hass')[-4000:]}")
            try:
                if api(http_port, token, "/api/").get("message") == "API running.":
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(2)
        say(f"Home Assistant's API answers after {time.monotonic() - started:.0f} s")
        # Once started, Home Assistant says online on homeassistant/status: flowbridge announces again.
        deadline = time.monotonic() + 120
        while "Home Assistant is online: announced its" not in processes.log("flowbridge") and time.monotonic() < deadline:
            time.sleep(1)
        heard = [line for line in processes.log("flowbridge").splitlines() if "Home Assistant is online" in line]
        if heard:
            say(f"flowbridge: {heard[0].split('info: ', 1)[-1]}")
        else:
            problems.append("flowbridge did not hear Home Assistant's online (homeassistant/status) within 120 s")

        # What flowbridge announced: the retained discovery configs.
        configs = {topic: json.loads(payload) for topic, payload in retained(broker_port, [f"{DISCOVERY_PREFIX}/sensor/#"]).items()}
        if not configs:
            raise SystemExit(f"flowbridge announced no sensor:\n{processes.log('flowbridge')}")
        expected = {f"sensor.{c['object_id']}": c for c in configs.values()}
        say(f"flowbridge announced {len(expected)} sensors; waiting for their entities and readings")

        # Every entity there, and (the simulated day's sunrise may take a simulated hour or two)
        # every value known, or 150 s.
        deadline = time.monotonic() + 150
        while True:
            states = {s["entity_id"]: s for s in api(http_port, token, "/api/states") if s["entity_id"] in expected}
            known = [e for e, s in states.items() if s["state"] not in ("unknown", "unavailable")]
            if (len(states) == len(expected) and len(known) == len(expected)) or time.monotonic() > deadline:
                break
            time.sleep(2)
        missing = sorted(set(expected) - set(states))
        if missing:
            problems.append(f"entities missing in Home Assistant: {', '.join(missing)}")

        # States against flowbridge's published values, in one consistent moment (values move
        # every few seconds at 720x).
        state_topics = sorted({config["state_topic"] for config in expected.values()})
        for _ in range(15):
            values = {topic: json.loads(payload) for topic, payload in retained(broker_port, state_topics, seconds=1.0).items()}
            states = {s["entity_id"]: s for s in api(http_port, token, "/api/states") if s["entity_id"] in expected}
            wrong = []
            for entity, config in expected.items():
                key = config["value_template"].split("'")[1]
                value = values.get(config["state_topic"], {}).get(key, "absent")
                state = states.get(entity, {}).get("state")
                if value == "absent" or state is None or not same_state(state, value):
                    wrong.append(f"{entity}: Home Assistant {state!r}, flowbridge {value!r}")
            if not wrong:
                break
            time.sleep(1)
        if wrong:
            problems.append("states that differ from flowbridge's values: " + "; ".join(wrong))

        rows = []
        for entity, config in sorted(expected.items()):
            state = states.get(entity)
            if state is None:
                continue
            attributes = state["attributes"]
            want = {
                "unit_of_measurement": config.get("unit_of_measurement"),
                "device_class": config.get("device_class"),
                "state_class": config.get("state_class"),
                "friendly_name": f"{config['device']['name']} {config['name']}",
            }
            for attribute, wanted in want.items():
                if attributes.get(attribute) != wanted:
                    problems.append(f"{entity}: {attribute} is {attributes.get(attribute)!r}, discovery says {wanted!r}")
            rows.append([entity, state["state"], attributes.get("unit_of_measurement") or "",
                         attributes.get("device_class") or "-", attributes.get("state_class") or "-",
                         attributes.get("friendly_name") or ""])
        header = ["entity", "state", "unit", "device_class", "state_class", "name"]
        widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
        say("the entities Home Assistant made of flowbridge's discovery:")
        for row in [header] + rows:
            print("  " + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), flush=True)

        # flowbridge stops: its last will (offline) makes every entity unavailable.
        Processes.stop(daemon)
        deadline = time.monotonic() + 20
        while True:
            states = {s["entity_id"]: s["state"] for s in api(http_port, token, "/api/states") if s["entity_id"] in expected}
            available = sorted(e for e, s in states.items() if s != "unavailable")
            if not available or time.monotonic() > deadline:
                break
            time.sleep(1)
        if available:
            problems.append(f"still available after flowbridge stopped: {', '.join(available)}")
        else:
            say(f"flowbridge stopped: all {len(states)} entities unavailable")

        # Home Assistant's own word on the discovery: no MQTT, sensor or template warning or error.
        with open(os.path.join(home, "home-assistant.log"), encoding="utf-8", errors="replace") as file:
            log = file.read().splitlines()
        complaints = [line for line in log if (" WARNING " in line or " ERROR " in line) and any(name in line for name in LOGGERS_WATCHED)]
        say(f"Home Assistant's log: {len(log)} lines, {len(complaints)} MQTT/sensor/template warnings or errors")
        for line in complaints:
            problems.append(f"Home Assistant's log: {line}")
    finally:
        processes.stop_all()
        if arguments.keep or problems:
            say(f"logs and Home Assistant's config kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)

    if problems:
        for problem in problems:
            print(f"ha-check: FAILED: {problem}", file=sys.stderr)
        return 1
    say(f"OK: Home Assistant {ha_version} discovered all {len(expected)} sensors with flowbridge's states, units and classes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
