#!/usr/bin/env python3
"""make ha-check: a real Home Assistant core discovers flowbridge's sensors and fills its Energy dashboard.

Runs, all on loopback and in a temporary folder: a private mosquitto, `flowbridge simulate`
(the demo home at 720x), `flowbridge run` with Config/demo.yaml as the Energy dashboard needs it
(ENERGY_VARIANT) and a tariff (TARIFF) plus `output.mqtt` with Home Assistant discovery, and Home
Assistant core (the release installed in the virtual environment this script runs from) with a
private config folder.
Home Assistant is set up as a user would: onboarding over its REST API, a long-lived access token
from its websocket, the MQTT integration through its config flow, pointed at the same broker.

Then it checks through Home Assistant's REST API that every sensor flowbridge announced is an
entity with the state flowbridge published, the unit, device class and state class of its
discovery config, and the device's name, and each amount of the money (of the day, the month and the
billing month, BILLING_DAY) the `last_reset` flowbridge published; saves Energy dashboard
preferences with flowbridge's lifetime sensors for grid consumption, return to grid, solar
production and battery in and out (ENERGY_FIELDS), the grid's
costs from flowbridge's amounts, then from its prices (MONEY_VARIANTS), waits for the recorder's
statistics of them, and requires Home Assistant's own `energy/validate` to report no issue for
either, and Home Assistant's own cost from flowbridge's import price to rise; restarts flowbridge
and requires Home Assistant's history of every lifetime sensor, over the run and the restart,
never to fall; checks that the entities turn unavailable when flowbridge
stops (its last will); and that Home Assistant's log has no warning or error of the loggers in
LOGGERS_WATCHED, of the setup of those integrations, or about flowbridge's entities. Exit status 0
when all holds.

Run with the virtual environment's Python (the Makefile does):
    .build/ha-check/venv-2025.4.4/bin/python tools/ha-check/ha_check.py --flowbridge .build/debug/flowbridge
"""

import argparse
import asyncio
import copy
import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import aiohttp  # Home Assistant's own HTTP library: the websocket client
import paho.mqtt.client as mqtt  # paho-mqtt 2.1 with 2025.4, 1.6 with 2024.3
import yaml  # PyYAML, one of Home Assistant's requirements

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DISCOVERY_PREFIX = "homeassistant"
HA_START_SECONDS = 300
# The recorder compiles statistics every 5 minutes (at :00, :05, … plus about 10 s), for the
# sensors that had states in the period: the first compile after the entities appeared has them,
# two periods and a margin are the deadline.
STATISTICS_SECONDS = 2 * 300 + 90
# The loggers whose warnings and errors are flowbridge's business: MQTT (discovery, the sensors'
# templates), the sensor platform and its statistics, the Energy dashboard, the recorder and the
# entity helpers. Home Assistant logs other things about a machine without internet (network,
# analytics, camera's libturbojpeg…), which are not flowbridge's; a line of any logger that names
# one of flowbridge's entities counts too, and one of Home Assistant's setup that names the setup
# of a watched integration ("Error during setup of component mqtt", "… entry 127.0.0.1 for mqtt").
LOGGERS_WATCHED = (
    "homeassistant.components.mqtt", "homeassistant.components.sensor", "homeassistant.components.energy",
    "homeassistant.components.recorder", "homeassistant.helpers.template", "homeassistant.helpers.entity",
)
SETUP_WATCHED = re.compile(r"\[homeassistant\.(setup|config_entries)\].*\b(component|for) (mqtt|sensor|energy|recorder|history)\b")

# Every node announces every account it counts (grid import and export, battery charged and
# discharged, solar production, home consumption), so the demo config's one flow widget fills
# every field of the Energy dashboard as it is; nothing is added to it.
ENERGY_VARIANT = {}

# The Energy dashboard's fields and flowbridge's lifetime sensor for each, the form Home Assistant
# recommends (kWh since the day book's first day, `total_increasing`, never falling): (field,
# account, the sensor's key in the widget's sensors, `lifetime_<account>`; HomeAssistantSensor.lifetime
# in Sources/Delivery/HomeAssistantMoneySensors.swift).
ENERGY_FIELDS = (
    ("grid consumption", "import", "lifetime_import"),
    ("return to grid", "export", "lifetime_export"),
    ("solar production", "production", "lifetime_production"),
    ("battery charged (energy going in)", "charged", "lifetime_charge"),
    ("battery discharged (energy coming out)", "discharged", "lifetime_discharge"),
)
# The billing month starts on the 15th (the meter-reading day): flowbridge announces the money of
# the billing month beside the calendar month's.
BILLING_DAY = 15
# Config/demo.yaml has no tariff: the check gives it one, with fixed prices (the price sensors are
# known from the start), fees and VAT, an export price and a standing charge.
TARIFF = {"currency": "EUR", "import": {"price": 0.30, "fees": 0.12, "vat": "19%"}, "export": {"price": 0.08},
          "standing_charge": 0.40}
# The two ways the Energy dashboard's grid takes flowbridge's money (energy/save_prefs), each
# validated: flowbridge's amounts of the day as the costs, or its prices now, from which Home
# Assistant makes cost sensors of its own. (variant, flow_from fields, flow_to fields), each field
# with the key of flowbridge's sensor in the grid's widget. Both flows name the price entity
# `entity_energy_price` (homeassistant/components/energy/data.py, 2024.3 and 2025.4 alike).
MONEY_VARIANTS = (
    ("flowbridge's amounts", {"stat_cost": "import_cost"}, {"stat_compensation": "export_earnings"}),
    ("flowbridge's prices", {"entity_energy_price": "import_price"}, {"entity_energy_price": "export_price"}),
)
# How long Home Assistant's own cost sensor of the grid's import may take to rise once it prices
# the kWh with flowbridge's import price: the import counter rises for most of a simulated day,
# which at 720x is 2 minutes.
PRICED_COST_SECONDS = 180

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
    name = f"ha-check-{uuid.uuid4().hex[:8]}"
    # paho-mqtt 2 wants the callbacks' signatures named; 1.6 has only its own.
    if hasattr(mqtt, "CallbackAPIVersion"):
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name)
    else:
        client = mqtt.Client(client_id=name)
    client.on_connect = lambda c, *_: c.subscribe([(topic, 1) for topic in topics])

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


def merged(base, changes):
    """`base` with `changes` laid over it, dictionaries key by key."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        out[key] = merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def energy_config(demo):
    """The demo config with ENERGY_VARIANT: a widget's `flow` node or `policy` changed key by key,
    a widget the demo lacks added whole."""
    config = copy.deepcopy(demo)
    for name, changes in ENERGY_VARIANT.items():
        widget = config["widgets"].get(name)
        if widget is None:
            config["widgets"][name] = copy.deepcopy(changes)
            continue
        for key, value in changes.items():
            if key == "policy":
                widget["policy"] = merged(widget.get("policy") or {}, value)
            else:
                widget["flow"][key] = merged(widget["flow"].get(key) or {}, value)
    return config


def choose_energy_sensors(config, discovered):
    """For each ENERGY_FIELDS row, the entity id of the widget's lifetime sensor of its account,
    from the retained discovery configs (`discovered`: by (widget, key)); when several flow
    widgets carry it, the first in the config. Returns ({account: [entity ids]}, table rows, problems)."""
    chosen, rows, problems = {}, [], []
    flows = [name for name, widget in config["widgets"].items() if widget.get("template") == "flow"]
    for field, account, key in ENERGY_FIELDS:
        widget = next((name for name in flows if (name, key) in discovered), None)
        if widget is None:
            problems.append(f"the Energy dashboard's {field}: flowbridge announced no {key} sensor")
            chosen[account] = []
            continue
        chosen[account] = [discovered[(widget, key)]]
        rows.append([field, account, widget, discovered[(widget, key)]])
    return chosen, rows, problems


def energy_prefs(chosen, money_from=None, money_to=None):
    """The Energy dashboard's preferences (energy/save_prefs) of the chosen sensors; the grid's
    first import and export flow with `money_from` and `money_to` ({field: entity}) laid over."""
    sources = []
    if chosen["import"] or chosen["export"]:
        flow_from = [{"stat_energy_from": e, "stat_cost": None, "entity_energy_price": None, "number_energy_price": None}
                     for e in chosen["import"]]
        flow_to = [{"stat_energy_to": e, "stat_compensation": None, "entity_energy_price": None, "number_energy_price": None}
                   for e in chosen["export"]]
        for flows, money in ((flow_from, money_from), (flow_to, money_to)):
            if flows and money:
                flows[0].update(money)
        sources.append({"type": "grid", "flow_from": flow_from, "flow_to": flow_to, "cost_adjustment_day": 0})
    sources += [{"type": "solar", "stat_energy_from": e} for e in chosen["production"]]
    sources += [{"type": "battery", "stat_energy_from": out, "stat_energy_to": into}
                for out, into in zip(chosen["discharged"], chosen["charged"])]
    return {"energy_sources": sources, "device_consumption": []}


def table(rows, header):
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  " + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), flush=True)


class HomeAssistant:
    """Home Assistant's REST API and one websocket connection, on 127.0.0.1:`port`."""

    def __init__(self, port):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.token = None
        self.loop = asyncio.new_event_loop()
        self.session = None
        self.socket = None
        self.next_id = 1

    def rest(self, method, path, body=None, form=None):
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        elif form is not None:
            data, headers["Content-Type"] = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise SystemExit(f"Home Assistant: {method} {path}: {error.code} {error.read().decode(errors='replace')}") from None

    def onboard(self):
        """Onboarding as the frontend walks it: the owner, a token of the owner's, the analytics
        and integration steps. Not `core_config`: it sets up integrations that need the internet
        (met, radio_browser, google_translate), whose errors would fill the log."""
        client_id = f"{self.base}/"
        code = self.rest("POST", "/api/onboarding/users", {
            "client_id": client_id, "name": "ha-check", "username": "ha-check",
            "password": uuid.uuid4().hex, "language": "en",
        })["auth_code"]
        tokens = self.rest("POST", "/auth/token", form={"grant_type": "authorization_code", "code": code, "client_id": client_id})
        self.token = tokens["access_token"]
        self.rest("POST", "/api/onboarding/analytics", {})
        self.rest("POST", "/api/onboarding/integration", {"client_id": client_id, "redirect_uri": f"{client_id}?auth_callback=1"})

    def connect_websocket(self):
        async def connect():
            self.session = aiohttp.ClientSession()
            self.socket = await self.session.ws_connect(f"{self.base}/api/websocket")
            if (await self.socket.receive_json())["type"] != "auth_required":
                raise SystemExit("Home Assistant's websocket did not ask for authentication")
            await self.socket.send_json({"type": "auth", "access_token": self.token})
            answer = await self.socket.receive_json()
            if answer["type"] != "auth_ok":
                raise SystemExit(f"Home Assistant's websocket refused the token: {answer}")

        self.loop.run_until_complete(connect())

    def command(self, kind, **fields):
        """One websocket command's result; a failed command ends the check."""
        async def send():
            message_id = self.next_id
            self.next_id += 1
            await self.socket.send_json({"id": message_id, "type": kind, **fields})
            while True:
                answer = await asyncio.wait_for(self.socket.receive_json(), 60)
                if answer.get("id") == message_id and answer.get("type") == "result":
                    return answer

        answer = self.loop.run_until_complete(send())
        if not answer["success"]:
            raise SystemExit(f"Home Assistant: {kind} failed: {answer.get('error')}")
        return answer["result"]

    def long_lived_token(self):
        """The REST API's token from here on: an access token of the login lasts 30 minutes,
        the check may take longer."""
        self.token = self.command("auth/long_lived_access_token", client_name="ha-check", lifespan=1)

    def set_up_mqtt(self, broker_port):
        """The MQTT integration through its config flow (the broker is a config entry since
        2022.3): the `broker` form, then the entry. Discovery is on, under `homeassistant/`."""
        flow = self.rest("POST", "/api/config/config_entries/flow", {"handler": "mqtt", "show_advanced_options": False})
        if flow.get("step_id") != "broker":
            raise SystemExit(f"the MQTT config flow began with {flow}, not the broker form")
        done = self.rest("POST", f"/api/config/config_entries/flow/{flow['flow_id']}", {"broker": "127.0.0.1", "port": broker_port})
        if done.get("type") != "create_entry":
            raise SystemExit(f"the MQTT config flow did not create its entry: {done}")

    def close(self):
        async def close():
            if self.socket:
                await self.socket.close()
            if self.session:
                await self.session.close()

        self.loop.run_until_complete(close())
        self.loop.close()


def write_configuration(home, http_port):
    """configuration.yaml: HTTP on loopback, the integrations the check uses named one by one
    (no `default_config`: its discovery and cloud integrations want a network)."""
    os.makedirs(home)
    with open(os.path.join(home, "configuration.yaml"), "w", encoding="utf-8") as file:
        file.write(
            "homeassistant:\n  name: ha-check\n  unit_system: metric\n  time_zone: UTC\n"
            "  latitude: 52.5\n  longitude: 13.4\n  elevation: 30\n  currency: EUR\n  country: DE\n"
            f"http:\n  server_host: 127.0.0.1\n  server_port: {http_port}\n"
            "api:\nauth:\nconfig:\nwebsocket_api:\nonboarding:\nrecorder:\nhistory:\nenergy:\nsensor:\n"
            "logger:\n  default: warning\n  logs:\n    homeassistant.components.mqtt: info\n"
        )


def same_state(ha_state, value):
    """Home Assistant's state text against flowbridge's value (null: unknown)."""
    if value is None:
        return ha_state == "unknown"
    try:
        return abs(float(ha_state) - float(value)) < 1e-9
    except ValueError:
        return False


def wait_for_statistics(ha, entities, since):
    """The recorder's 5-minute statistics of `entities` since `since`, once each has one, or
    what there is at the deadline: {entity: [rows]}."""
    deadline = time.monotonic() + STATISTICS_SECONDS
    while True:
        found = ha.command("recorder/statistics_during_period", start_time=since.isoformat(), statistic_ids=entities,
                           period="5minute", types=["state", "sum"])
        if all(found.get(entity) for entity in entities) or time.monotonic() > deadline:
            return found
        time.sleep(10)


def next_compile(now):
    """When the recorder next compiles statistics: the next 5-minute mark, plus about 10 s."""
    mark = now.replace(minute=now.minute - now.minute % 5, second=10, microsecond=0)
    return mark if mark > now else mark + datetime.timedelta(minutes=5)


def same_instant(ha_text, flowbridge_text):
    """Home Assistant's `last_reset` attribute against the one flowbridge published."""
    try:
        return datetime.datetime.fromisoformat(ha_text) == datetime.datetime.fromisoformat(flowbridge_text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return False


def validation_issues(validation):
    """energy/validate's issues as (type, affected entities)."""
    return [(issue["type"], issue["affected_entities"])
            for group in validation["energy_sources"] + validation["device_consumption"] for issue in group]


def log_complaints(home, entities):
    """Home Assistant's warnings and errors of LOGGERS_WATCHED, of SETUP_WATCHED, or naming one of
    `entities`, from its log (and the previous one, which a restart moves to home-assistant.log.1)."""
    lines = []
    for name in ("home-assistant.log.1", "home-assistant.log"):
        path = os.path.join(home, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as file:
                lines += file.read().splitlines()
    complaints = [line for line in lines if (" WARNING " in line or " ERROR " in line)
                  and (any(f"[{name}" in line for name in LOGGERS_WATCHED) or SETUP_WATCHED.search(line)
                       or any(e in line for e in entities))]
    return lines, complaints


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
    expected = {}
    ha = None
    try:
        broker_port, http_port = free_port(), free_port()
        with open(os.path.join(folder, "mosquitto.conf"), "w", encoding="utf-8") as file:
            file.write(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        broker = processes.start("mosquitto", [mosquitto, "-c", os.path.join(folder, "mosquitto.conf")])
        if not wait_for_port(broker_port, 10, broker):
            raise SystemExit(f"mosquitto did not start:\n{processes.log('mosquitto')}")

        # Config/demo.yaml with ENERGY_VARIANT and TARIFF, on this broker, with its own state, and output.mqtt with discovery.
        with open(os.path.join(ROOT, "Config", "demo.yaml"), encoding="utf-8") as file:
            config = energy_config(yaml.safe_load(file))
        config["tariff"] = TARIFF
        config["billing_day"] = BILLING_DAY
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

        started_at = datetime.datetime.now(datetime.timezone.utc)
        home = os.path.join(folder, "homeassistant")
        write_configuration(home, http_port)
        say(f"starting Home Assistant {ha_version} on 127.0.0.1:{http_port} (the first start takes a minute or two)")
        started = time.monotonic()
        hass_process = processes.start("hass", [hass, "-c", home, "--skip-pip"])
        ha = HomeAssistant(http_port)
        while True:
            if hass_process.poll() is not None:
                raise SystemExit(f"Home Assistant exited ({hass_process.returncode}):\n{processes.log('hass')[-4000:]}")
            if time.monotonic() - started > HA_START_SECONDS:
                raise SystemExit(f"Home Assistant's API did not answer in {HA_START_SECONDS} s:\n{processes.log('hass')[-4000:]}")
            try:
                with urllib.request.urlopen(f"{ha.base}/api/onboarding", timeout=10) as response:
                    steps = json.loads(response.read())
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(2)
        say(f"Home Assistant's API answers after {time.monotonic() - started:.0f} s; onboarding steps {[s['step'] for s in steps]}")
        ha.onboard()
        ha.connect_websocket()
        ha.long_lived_token()
        ha.set_up_mqtt(broker_port)
        say("onboarded (without core_config), a long-lived access token, MQTT set up through its config flow")

        # Once MQTT is set up, Home Assistant says online on homeassistant/status: flowbridge announces again.
        deadline = time.monotonic() + 120
        while "Home Assistant is online: announced its" not in processes.log("flowbridge") and time.monotonic() < deadline:
            time.sleep(1)
        heard = [line for line in processes.log("flowbridge").splitlines() if "Home Assistant is online" in line]
        if heard:
            say(f"flowbridge: {heard[0].split('info: ', 1)[-1]}")
        else:
            problems.append("flowbridge did not hear Home Assistant's online (homeassistant/status) within 120 s")

        # What flowbridge announced: the retained discovery configs.
        configs = [json.loads(payload) for payload in retained(broker_port, [f"{DISCOVERY_PREFIX}/sensor/#"]).values()]
        if not configs:
            raise SystemExit(f"flowbridge announced no sensor:\n{processes.log('flowbridge')}")
        expected = {f"sensor.{c['object_id']}": c for c in configs}
        say(f"flowbridge announced {len(expected)} sensors; waiting for their entities and readings")

        # Every entity there, and (the simulated day's sunrise may take a simulated hour or two)
        # every value known, or 150 s.
        deadline = time.monotonic() + 150
        while True:
            states = {s["entity_id"]: s for s in ha.rest("GET", "/api/states") if s["entity_id"] in expected}
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
            states = {s["entity_id"]: s for s in ha.rest("GET", "/api/states") if s["entity_id"] in expected}
            wrong = []
            for entity, sensor in expected.items():
                key = sensor["value_template"].split("'")[1]
                value = values.get(sensor["state_topic"], {}).get(key, "absent")
                state = states.get(entity, {}).get("state")
                if value == "absent" or state is None or not same_state(state, value):
                    wrong.append(f"{entity}: Home Assistant {state!r}, flowbridge {value!r}")
            if not wrong:
                break
            time.sleep(1)
        if wrong:
            problems.append("states that differ from flowbridge's values: " + "; ".join(wrong))

        rows = []
        for entity, sensor in sorted(expected.items()):
            state = states.get(entity)
            if state is None:
                continue
            attributes = state["attributes"]
            want = {
                "unit_of_measurement": sensor.get("unit_of_measurement"),
                "device_class": sensor.get("device_class"),
                "state_class": sensor.get("state_class"),
                "friendly_name": f"{sensor['device']['name']} {sensor['name']}",
            }
            for attribute, wanted in want.items():
                if attributes.get(attribute) != wanted:
                    problems.append(f"{entity}: {attribute} is {attributes.get(attribute)!r}, discovery says {wanted!r}")
            rows.append([entity, state["state"], attributes.get("unit_of_measurement") or "",
                         attributes.get("device_class") or "-", attributes.get("state_class") or "-",
                         attributes.get("friendly_name") or ""])
        say("the entities Home Assistant made of flowbridge's discovery:")
        table(rows, ["entity", "state", "unit", "device_class", "state_class", "name"])

        # The day's amounts restart at local midnight by their last_reset, which Home Assistant
        # must have as flowbridge published it (an amount may fall within a day: no drop tells).
        rows = []
        for entity, sensor in sorted(expected.items()):
            if "last_reset_value_template" not in sensor or entity not in states:
                continue
            published = values.get(sensor["state_topic"], {}).get(sensor["last_reset_value_template"].split("'")[1])
            held = states[entity]["attributes"].get("last_reset")
            if not same_instant(held, published):
                problems.append(f"{entity}: last_reset is {held!r}, flowbridge published {published!r}")
            rows.append([entity, states[entity]["state"], held or "-", published or "-"])
        if not rows:
            problems.append("flowbridge announced no sensor of the money (with last_reset_value_template)")
        else:
            say("the money of the day, the month and the billing month: Home Assistant's last_reset against flowbridge's:")
            table(rows, ["entity", "state", "last_reset (Home Assistant)", "last_reset (flowbridge)"])

        # The Energy dashboard of flowbridge's sensors, as Home Assistant's frontend saves it.
        discovered = {(sensor["state_topic"].split("/")[-2], sensor["value_template"].split("'")[1]): entity
                      for entity, sensor in expected.items()}
        chosen, energy_rows, missing_fields = choose_energy_sensors(config, discovered)
        problems += missing_fields
        say("the Energy dashboard's fields and flowbridge's sensors:")
        table(energy_rows, ["field", "account", "widget", "entity"])
        # The grid's money: flowbridge's sensors in the widget whose sensor is the grid's import.
        grid_widget = next((row[2] for row in energy_rows if row[1] == "import"), None)
        variants = []
        for variant, money_from, money_to in MONEY_VARIANTS:
            fields = [{field: discovered.get((grid_widget, key)) for field, key in money.items()} for money in (money_from, money_to)]
            absent = [key for money in (money_from, money_to) for key in money.values() if (grid_widget, key) not in discovered]
            if absent:
                problems.append(f"{variant}: flowbridge announced no {', '.join(absent)} sensor in widget {grid_widget}")
            variants.append((variant, *fields))
        say("the Energy dashboard's grid costs and flowbridge's sensors:")
        table([[variant, flow, field, entity] for variant, money_from, money_to in variants
               for flow, money in (("flow_from", money_from), ("flow_to", money_to)) for field, entity in money.items()],
              ["variant", "flow", "field", "entity"])

        # First flowbridge's amounts as the costs: their statistics, like the energy's, must exist.
        variant, money_from, money_to = variants[0]
        prefs = energy_prefs(chosen, money_from, money_to)
        saved_at = datetime.datetime.now(datetime.timezone.utc)
        ha.command("energy/save_prefs", **prefs)
        say(f"energy/save_prefs ({variant}): {json.dumps(prefs)}")
        early = ha.command("energy/validate")
        say("energy/validate before the statistics compile (timing, not a fault): "
            f"{sorted({kind for kind, _ in validation_issues(early)}) or 'no issue'}")
        energy_entities = sorted({entity for entities in chosen.values() for entity in entities})
        statistic_entities = energy_entities + sorted(e for e in (*money_from.values(), *money_to.values()) if e)
        say(f"waiting for the statistics compile (next at {next_compile(saved_at):%H:%M:%S} UTC; deadline {STATISTICS_SECONDS} s)")
        since = saved_at.replace(second=0, microsecond=0) - datetime.timedelta(minutes=10)
        statistics = wait_for_statistics(ha, statistic_entities, since)
        without = [entity for entity in statistic_entities if not statistics.get(entity)]
        if without:
            problems.append(f"no statistics after {STATISTICS_SECONDS} s for {', '.join(without)}")
        say(f"statistics after {(datetime.datetime.now(datetime.timezone.utc) - saved_at).total_seconds():.0f} s:")
        rows = []
        for entity in statistic_entities:
            last = (statistics.get(entity) or [{}])[-1]
            rows.append([entity, len(statistics.get(entity, []))] + [
                "-" if last.get(kind) is None else f"{last[kind]:.6g}" for kind in ("state", "sum")])
        table(rows, ["entity", "5-minute rows", "last state", "last sum"])
        validation = ha.command("energy/validate")
        say(f"energy/validate ({variant}): {json.dumps(validation)}")
        for kind, affected in validation_issues(validation):
            problems.append(f"energy/validate ({variant}): {kind} for {affected}")

        # Then flowbridge's prices: Home Assistant makes a cost sensor of its own for each flow
        # (`<energy entity>_cost`, `_compensation`), which prices the kWh with them.
        variant, money_from, money_to = variants[1]
        prefs = energy_prefs(chosen, money_from, money_to)
        ha.command("energy/save_prefs", **prefs)
        say(f"energy/save_prefs ({variant}): {json.dumps(prefs)}")
        own = [f"{chosen['import'][0]}_cost"] if chosen["import"] else []
        own += [f"{chosen['export'][0]}_compensation"] if chosen["export"] else []
        deadline = time.monotonic() + PRICED_COST_SECONDS
        while True:
            held = {s["entity_id"]: s for s in ha.rest("GET", "/api/states") if s["entity_id"] in own}
            try:
                rising = bool(own) and float(held.get(own[0], {}).get("state")) > 0
            except (TypeError, ValueError):
                rising = False
            if rising or time.monotonic() > deadline:
                break
            time.sleep(2)
        if not rising:
            problems.append(f"{variant}: Home Assistant's cost of the grid's import ({own[0] if own else 'none'}) did not rise in "
                            f"{PRICED_COST_SECONDS} s: {held.get(own[0], {}).get('state') if own else 'no import sensor'!r}")
        say("Home Assistant's own costs from flowbridge's prices:")
        table([[entity, held.get(entity, {}).get("state", "absent"), held.get(entity, {}).get("attributes", {}).get("unit_of_measurement") or "-"]
               for entity in own], ["entity", "state", "unit"])
        validation = ha.command("energy/validate")
        say(f"energy/validate ({variant}): {json.dumps(validation)}")
        for kind, affected in validation_issues(validation):
            problems.append(f"energy/validate ({variant}): {kind} for {affected}")

        # flowbridge restarts: its lifetime sensors carry on from the closed days its state keeps.
        # Across the restart, and any midnight the run crosses (the daemon's day is the wall
        # clock's, whatever the simulator's speed), none of them may fall in Home Assistant's history.
        Processes.stop(daemon)
        daemon = processes.start("flowbridge-again", [flowbridge, "run", "--config", config_path])
        lifetime = sorted(entity for entity, sensor in expected.items() if sensor["value_template"].split("'")[1].startswith("lifetime_"))
        deadline = time.monotonic() + 60
        while True:
            held = {s["entity_id"]: s["state"] for s in ha.rest("GET", "/api/states") if s["entity_id"] in lifetime}
            if all(held.get(e) not in (None, "unknown", "unavailable") for e in lifetime) or time.monotonic() > deadline:
                break
            time.sleep(1)
        time.sleep(5)  # a few more readings after the restart
        midnights = sum(processes.log(name).count(" closed: ") for name in ("flowbridge", "flowbridge-again"))
        query = urllib.parse.urlencode({"filter_entity_id": ",".join(lifetime), "minimal_response": "", "no_attributes": ""})
        history = ha.rest("GET", f"/api/history/period/{urllib.parse.quote(started_at.isoformat())}?{query}") or []
        rows = []
        for states in history:
            entity = states[0]["entity_id"]
            numbers = [float(s["state"]) for s in states if s["state"] not in ("unknown", "unavailable")]
            falls = [(a, b) for a, b in zip(numbers, numbers[1:]) if b < a]
            if falls:
                problems.append(f"{entity} fell in Home Assistant's history: {falls[:3]}")
            if len(numbers) < 2:
                problems.append(f"{entity}: {len(numbers)} numeric states in Home Assistant's history, too few to tell")
            rows.append([entity, len(numbers), numbers[0] if numbers else "-", numbers[-1] if numbers else "-", len(falls)])
        say(f"the lifetime sensors across a restart of flowbridge (and {midnights} midnights the run crossed):")
        table(rows, ["entity", "states", "first", "last", "falls"])
        if len(rows) != len(lifetime):
            problems.append(f"Home Assistant's history has {len(rows)} of the {len(lifetime)} lifetime sensors")

        # flowbridge stops: its last will (offline) makes every entity unavailable.
        Processes.stop(daemon)
        deadline = time.monotonic() + 20
        while True:
            states = {s["entity_id"]: s["state"] for s in ha.rest("GET", "/api/states") if s["entity_id"] in expected}
            available = sorted(e for e, s in states.items() if s != "unavailable")
            if not available or time.monotonic() > deadline:
                break
            time.sleep(1)
        if available:
            problems.append(f"still available after flowbridge stopped: {', '.join(available)}")
        else:
            say(f"flowbridge stopped: all {len(states)} entities unavailable")

        # Home Assistant's own word on the discovery, the sensors and their statistics.
        lines, complaints = log_complaints(home, expected)
        say(f"Home Assistant's log: {len(lines)} lines, {len(complaints)} warnings or errors of "
            f"{', '.join(LOGGERS_WATCHED)}, of the setup of mqtt, sensor, energy, recorder or history, or about flowbridge's entities")
        for line in complaints:
            problems.append(f"Home Assistant's log: {line}")
    finally:
        if ha:
            ha.close()
        processes.stop_all()
        if arguments.keep or problems:
            say(f"logs and Home Assistant's config kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)

    if problems:
        for problem in problems:
            print(f"ha-check: FAILED: {problem}", file=sys.stderr)
        return 1
    say(f"OK: Home Assistant {ha_version} discovered all {len(expected)} sensors with flowbridge's states, units and classes; "
        f"its Energy dashboard takes them, and the grid's costs from flowbridge's amounts and from its prices, with no issue")
    return 0


if __name__ == "__main__":
    sys.exit(main())
