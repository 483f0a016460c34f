#!/usr/bin/env bash
# The flowbridge add-on's start. Its config is either
# - flowbridge.yaml in the add-on's config folder (Home Assistant's addon_config mapping, /config
#   here): the whole config language, used as written; the broker Home Assistant offers (or the
#   options' mqtt_host) is added at its end when it has no mqtt: section of its own, and its
#   state_file is /data's unless it names one; or
# - the add-on's options (/data/options.json), written as flowbridge's config: sources, one flow
#   widget's slots, a push and the sensors, the simple way to start. The device examples are put
#   into the config folder then, to start a flowbridge.yaml from.
# `flowbridge check` runs on the config at every start, its report and errors in the add-on's log;
# a config it refuses stops the start there. The config is written to /data (JSON is YAML); the
# broker password and the widget token go to files of their own in /data (mode 0600), never into
# the config or onto the command line. Then the daemon runs, its state in /data.
#
# The paths can be pointed elsewhere (the tests do): FLOWBRIDGE_OPTIONS, FLOWBRIDGE_DATA,
# FLOWBRIDGE_ADDON_CONFIG, FLOWBRIDGE_EXAMPLES, SUPERVISOR_API (any URL curl reads, file:// too),
# FLOWBRIDGE (the binary).
set -euo pipefail

options=${FLOWBRIDGE_OPTIONS:-/data/options.json}
data=${FLOWBRIDGE_DATA:-/data}
addon_config=${FLOWBRIDGE_ADDON_CONFIG:-/config}
examples=${FLOWBRIDGE_EXAMPLES:-/usr/share/doc/flowbridge/examples}
supervisor=${SUPERVISOR_API:-http://supervisor}
flowbridge=${FLOWBRIDGE:-flowbridge}
user_config=$addon_config/flowbridge.yaml

say() { echo "flowbridge add-on: $*" >&2; }
[ -r "$options" ] || { say "error: cannot read the options ($options)"; exit 78; }
option() { jq -r --arg key "$1" '.[$key] // empty | tostring' "$options"; }
umask 077

# A top-level key of the config folder's flowbridge.yaml.
has_key() { grep -q -E "^$1[[:space:]]*:" "$user_config"; }

# The broker, unless the config folder's flowbridge.yaml names its own: the options' own, else
# Home Assistant's MQTT service. As flowbridge's mqtt: section, JSON.
mqtt=""
if [ ! -f "$user_config" ] || ! has_key mqtt; then
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
  mqtt=$(jq -cn --arg host "$host" --arg port "$port" --arg username "$username" --arg password_file "$password_file" \
    --argjson tls "$tls" --arg protocol "$protocol" '
    {
      host: $host,
      port: (if $port == "" then null else ($port | tonumber) end),
      username: $username,
      password_file: $password_file,
      protocol: (if $protocol == "" then null else $protocol end),
      tls: (if $tls then {} else null end),
      client_id: "flowbridge-addon",
      topic_prefix: "flowbridge"
    } | with_entries(select(.value != null and .value != ""))')
fi

if [ -f "$user_config" ]; then
  # The whole config language: the file as written, what the add-on adds at its end (so every
  # line check names is the file's own line).
  config=$data/flowbridge.yaml
  {
    cat "$user_config"
    printf '\n# Added by the flowbridge add-on at its start:\n'
    if [ -n "$mqtt" ]; then echo "mqtt: $mqtt"; fi
    if ! has_key state_file; then echo "state_file: $(jq -n --arg path "$data/state.json" '$path')"; fi
    # The status page in the sidebar, through the ingress proxy (the only client let in).
    if ! has_key http; then echo 'http: {listen: "0.0.0.0:8099", ingress: true}'; fi
  } > "$config.new"
  mv "$config.new" "$config"
  added="${mqtt:+ the broker}"
  has_key state_file || added="$added${added:+ and} the state in $data"
  say "config: $user_config, as $config${added:+ with$added added at its end}; of the options only the broker's and log_level apply"
else
  token_file=""
  if [ -n "$(option push_token)" ]; then
    token_file=$data/widget-token
    option push_token | tr -d '\n' > "$token_file"
  else
    rm -f "$data/widget-token"
  fi

  # Else the options, mapped onto the config's keys. A rate with commas is a list (a sum, or with
  # `-name` a difference); `counter:X` and `daily:X` are the totals read from a device's counter.
  config=$data/flowbridge.json
  jq \
    --argjson mqtt "$mqtt" --arg token_file "$token_file" --arg state "$data/state.json" \
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
      mqtt: $mqtt,
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
  say "config written from the options to $config"
  # The widget's HTTP API, else nothing yet: the daemon says so in its log.
  if [ -n "$(option push_url)" ]; then say "pushes go to $(option push_url | sed -E 's#(://)[^/@]*@#\1#; s#[?].*##')"; fi
  # The device examples and the reference, to start a flowbridge.yaml from.
  if [ -d "$addon_config" ] && [ -d "$examples" ] && [ ! -e "$addon_config/examples" ]; then
    cp -r "$examples" "$addon_config/examples"
    say "device examples copied to $addon_config/examples: one of them copied to $user_config is used instead of the options, with the whole config language"
  fi
fi

# check, as at every start: its report (which topic feeds which slot, with which sign), or every
# error with its key and line, in the log; a config it refuses stops the start with its status.
"$flowbridge" check --config "$config" >&2 || {
  status=$?
  say "error: flowbridge check refused the config (above); the daemon is not started"
  exit "$status"
}

exec "$flowbridge" run --config "$config" --log-level "$(option log_level | grep . || echo info)"
