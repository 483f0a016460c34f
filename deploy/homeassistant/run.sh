#!/usr/bin/env bash
# The flowbridge add-on's start: writes flowbridge's config from the add-on's options
# (/data/options.json) and the broker Home Assistant offers (the Supervisor's MQTT service, with
# its credentials), then runs the daemon, its state in /data. The config is JSON (JSON is YAML);
# the broker password and the widget token go to files of their own in /data (mode 0600), never
# into the config or onto the command line.
#
# The paths can be pointed elsewhere (the tests do): FLOWBRIDGE_OPTIONS, FLOWBRIDGE_DATA,
# SUPERVISOR_API (any URL curl reads, file:// too), FLOWBRIDGE (the binary).
set -euo pipefail

options=${FLOWBRIDGE_OPTIONS:-/data/options.json}
data=${FLOWBRIDGE_DATA:-/data}
supervisor=${SUPERVISOR_API:-http://supervisor}
flowbridge=${FLOWBRIDGE:-flowbridge}
config=$data/flowbridge.json

say() { echo "flowbridge add-on: $*" >&2; }
[ -r "$options" ] || { say "error: cannot read the options ($options)"; exit 78; }
option() { jq -r --arg key "$1" '.[$key] // empty | tostring' "$options"; }
umask 077

# The broker: the options' own, else Home Assistant's MQTT service.
host=$(option mqtt_host)
port=$(option mqtt_port)
username=$(option mqtt_username)
password=$(option mqtt_password)
tls=false
protocol=""
if [ -z "$host" ]; then
  service=""
  if [ -n "${SUPERVISOR_TOKEN:-}" ]; then
    service=$(curl -fsS -H "Authorization: Bearer $SUPERVISOR_TOKEN" "$supervisor/services/mqtt" 2>/dev/null || true)
  fi
  if [ -z "$service" ] || [ "$(jq -r '.data.host // empty' <<< "$service")" = "" ]; then
    say "error: no broker: Home Assistant offers no MQTT service (install the Mosquitto broker add-on) and mqtt_host is not set"
    exit 78
  fi
  host=$(jq -r '.data.host' <<< "$service")
  port=$(jq -r '.data.port // empty | tostring' <<< "$service")
  username=$(jq -r '.data.username // empty' <<< "$service")
  password=$(jq -r '.data.password // empty' <<< "$service")
  tls=$(jq -r '.data.ssl // false' <<< "$service")
  protocol=$(jq -r '.data.protocol // empty' <<< "$service")
  say "broker: Home Assistant's MQTT service, $host:${port:-1883}${username:+ as $username}"
else
  say "broker: $host:${port:-1883}${username:+ as $username} (mqtt_host)"
fi
password_file=""
if [ -n "$password" ]; then
  password_file=$data/mqtt-password
  printf '%s' "$password" > "$password_file"
else
  rm -f "$data/mqtt-password"
fi
token_file=""
if [ -n "$(option push_token)" ]; then
  token_file=$data/widget-token
  option push_token | tr -d '\n' > "$token_file"
else
  rm -f "$data/widget-token"
fi

# The options, mapped onto the config's keys. A rate with commas is a list (a sum, or with
# `-name` a difference); `counter:X` and `daily:X` are the totals read from a device's counter.
jq \
  --arg host "$host" --arg port "$port" --arg username "$username" --arg password_file "$password_file" \
  --argjson tls "$tls" --arg protocol "$protocol" --arg token_file "$token_file" --arg state "$data/state.json" \
  '
  def present: with_entries(select(.value != null and .value != ""));
  def rate: if test(",") then split(",") | map(gsub("^\\s+|\\s+$"; "")) else . end;
  def total:
    if startswith("counter:") then {counter: .[8:]}
    elif startswith("daily:") then {daily: .[6:]}
    else . end;
  def node: present | (if .rate then .rate |= rate else . end) | (if .total then .total |= total else . end);
  def slot($name): (.[$name] // {}) | node | if .rate then . else null end;
  {
    mqtt: ({
      host: $host,
      port: (if $port == "" then null else ($port | tonumber) end),
      username: $username,
      password_file: $password_file,
      protocol: (if $protocol == "" then null else $protocol end),
      tls: (if $tls then {} else null end),
      client_id: "flowbridge-addon",
      topic_prefix: "flowbridge"
    } | present),
    timezone: .timezone,
    state_file: $state,
    # The status page in the sidebar, through the ingress proxy (the only client let in).
    http: {listen: "0.0.0.0:8099", ingress: true},
    output: (if .sensors == true then {mqtt: {home_assistant: true}} else null end),
    sources: ((.sources // []) | map({key: .name, value: (del(.name) | present)}) | from_entries),
    widgets: {
      power: ({
        template: "flow",
        label: .label,
        subtitle: .subtitle,
        unit: (.unit // "W"),
        flow: ({
          inputs: ((.inputs // []) | map(node) | if length == 0 then null else . end),
          output: slot("output"),
          storage: slot("storage"),
          exchange: slot("exchange")
        } | present),
        push: (if (.push_url // "") == "" then null
               else {url: .push_url, token_file: (if $token_file == "" then null else $token_file end)} | present end)
      } | present)
    }
  } | present
  ' "$options" > "$config.new"
mv "$config.new" "$config"
say "config written to $config"

# The widget's HTTP API, else nothing yet: the daemon says so in its log.
[ -n "$(option push_url)" ] && say "pushes go to $(option push_url | sed -E 's#(://)[^/@]*@#\1#; s#[?].*##')"

exec "$flowbridge" run --config "$config" --log-level "$(option log_level | grep . || echo info)"
