import FlowCore

/// One sensor flowbridge announces to Home Assistant: a value of one widget's document.
public struct HomeAssistantSensor: Sendable, Equatable {
    /// What the sensor measures, and so its unit and classes in Home Assistant.
    public enum Quantity: Sendable, Equatable {
        /// A node's rate: W, signed as on the widget (grid + importing, battery + filling).
        case power
        /// A node's energy today: kWh that restart at 0 at local midnight, which Home Assistant's
        /// `total_increasing` reads as a new cycle (the Energy dashboard takes such sensors).
        case energyToday
        /// A derived home's energy today (`rate: balance`): the balance of the other accounts,
        /// which steps back when the meters report at different moments, so `total_increasing`
        /// would read each step back as a new cycle (and Home Assistant warns). `total` with the
        /// day's start as `last_reset` tells the new day instead, as the money does.
        case energyTodayBalance
        /// A flow widget's account since the day book's first day: kWh that only rise, across
        /// restarts and midnights (the closed days' sums and today's). The form Home Assistant
        /// recommends for the Energy dashboard: `total_increasing` with no cycle to tell.
        case energyLifetime
        /// A battery's charge in %.
        case batteryLevel
        /// A progress bar's value in %.
        case percent
        /// An amount of a period so far (the local day, the month, the billing month) in the
        /// tariff's currency (import cost, saved…). Home Assistant takes `monetary` with the state
        /// class `total` only (2024.3 and 2025.4 alike, `DEVICE_CLASS_STATE_CLASSES`), and an
        /// amount may fall within its period (a negative price, export earnings), so a new period
        /// is told by `last_reset`, the period's first instant, not by a drop.
        case money(Currency, MoneyPeriod)
        /// A price per kWh in force now, fees and VAT in (`EUR/kWh`): what the Energy dashboard's
        /// "entity with the current price" takes. No device class: `monetary` is for amounts.
        case pricePerKWh(Currency)

        public var unit: String {
            switch self {
            case .power: "W"
            case .energyToday, .energyTodayBalance, .energyLifetime: "kWh"
            case .batteryLevel, .percent: "%"
            case .money(let currency, _): currency.code
            case .pricePerKWh(let currency): "\(currency.code)/kWh"
            }
        }

        public var deviceClass: String? {
            switch self {
            case .power: "power"
            case .energyToday, .energyTodayBalance, .energyLifetime: "energy"
            case .batteryLevel: "battery"
            case .money: "monetary"
            case .percent, .pricePerKWh: nil
            }
        }

        public var stateClass: String {
            switch self {
            case .energyToday, .energyLifetime: "total_increasing"
            case .money, .energyTodayBalance: "total"
            case .power, .batteryLevel, .percent, .pricePerKWh: "measurement"
            }
        }

        /// The period whose start is the sensor's `last_reset`; nil for a sensor without one.
        public var resetPeriod: MoneyPeriod? {
            switch self {
            case .money(_, let period): period
            case .energyTodayBalance: .day
            default: nil
            }
        }
    }

    /// Where in the widget's document the value is.
    public enum Field: Sendable, Equatable {
        case rate(NodePlace)
        /// A node's account of the day (kWh at Wh resolution), from the engine's accounts rather
        /// than the document: the widget rounds its totals to 0.1 kWh, an hour's bar in the
        /// Energy dashboard must not.
        case account(NodePlace, EnergyAccount)
        /// The widget's account (all its nodes') since the day book's first day (kWh).
        case lifetime(EnergyAccount)
        case level(NodePlace)
        /// A progress document's `value` (a fraction), as %.
        case progressValue
        /// A figure of the widget's money of a period, from the engine as the accounts are.
        case money(MoneyFigure, MoneyPeriod)
    }

    public var widget: String
    /// The sensor's field in `<prefix>/<widget>/sensors`, unique within the widget: `solar_power`.
    public var key: String
    /// The name Home Assistant shows after the device's: `Solar power`.
    public var name: String
    public var quantity: Quantity
    public var field: Field
    /// Decimals Home Assistant shows: as many as the widget's policy rounds to.
    public var precision: Int
}

/// The Home Assistant side of a config: a sensor per node's power, per node's account of the day,
/// per battery level and per progress bar, and with a tariff the day's money and the prices of
/// each priced flow widget, all of one device, with the discovery config that announces each and
/// the values it reads.
///
/// A sensor is known by its widget and its node's name (`flowbridge_power_solar_power`), not by
/// the node's position: inputs may be reordered without one taking over another's history, and a
/// renamed or removed node is a sensor that is gone, whose discovery config the sink removes.
/// Home Assistant reads each sensor from one retained JSON object per widget
/// (`<prefix>/<widget>/sensors`, `{"solar_power": 3200, "grid_import": 3.1, …}`), which the sink
/// computes from the document; a value the document does not have is `null`, which a
/// `value_template` renders as `None`: *unknown* in Home Assistant, never 0.
public struct HomeAssistantDiscovery: Sendable, Equatable {
    public let settings: MQTTOutputSettings
    public let discoveryPrefix: String
    /// The discovery topic's node id and the device's identifier: the prefix as an id.
    public let nodeID: String
    /// flowbridge's version, shown on the device.
    public let software: String
    public private(set) var sensors: [HomeAssistantSensor] = []
    /// Sensors left out because another one has their id already, described for `check`.
    public private(set) var conflicts: [String] = []
    /// Each flow widget's input names as configured: how an input is found in a document that
    /// lacks an earlier one (a node with nothing to show yet is left out, shifting the rest).
    private var inputNames: [String: [String?]] = [:]

    public init(flow: FlowConfig, settings: MQTTOutputSettings, homeAssistant: MQTTOutputSettings.HomeAssistant, software: String) {
        // The billing month's sensors only where it is not the calendar month.
        let periods: [MoneyPeriod] = flow.billingDay == 1 ? [.day, .month] : [.day, .month, .billing]
        self.settings = settings
        discoveryPrefix = homeAssistant.discoveryPrefix
        nodeID = Self.id(settings.prefix).isEmpty ? "flowbridge" : Self.id(settings.prefix)
        self.software = software
        var found: [HomeAssistantSensor] = []
        let severalFlows = flow.widgets.count > 1
        for widget in flow.widgets {
            inputNames[widget.name] = widget.inputs.map(\.name)
            let precision = (rate: Self.decimals(widget.policy.rateStep), total: Self.decimals(widget.policy.totalStep),
                             level: Self.decimals(widget.policy.levelStep))
            let widgetLabel = severalFlows ? "\(widget.shared.label ?? widget.name) " : ""
            for (place, node) in widget.nodes {
                let label = widgetLabel + (node.name ?? Self.defaultName(place))
                let base = Self.id(node.name ?? "").isEmpty ? Self.id(Self.defaultKey(place)) : Self.id(node.name ?? "")
                func sensor(_ suffix: String, _ what: String, _ quantity: HomeAssistantSensor.Quantity,
                            _ field: HomeAssistantSensor.Field, _ precision: Int) {
                    found.append(HomeAssistantSensor(
                        widget: widget.name, key: "\(base)_\(suffix)", name: "\(label) \(what)", quantity: quantity, field: field,
                        precision: precision))
                }
                sensor("power", "power", .power, .rate(place), precision.rate)
                // One energy sensor per account; the one `total:` shows keeps the id it always had.
                let shown = node.shownAccount(in: place.slot)
                for (account, _) in node.accountTotals(in: place.slot) {
                    let suffix = account == shown ? node.total.map { Self.energyWords($0).suffix } ?? Self.suffix(account) : Self.suffix(account)
                    sensor(suffix, Self.words(account), Self.isDerived(node) ? .energyTodayBalance : .energyToday, .account(place, account), Self.accountDecimals)
                }
                if node.level != nil { sensor("level", "level", .batteryLevel, .level(place), precision.level) }
            }
            found += HomeAssistantSensor.lifetime(of: widget, label: widgetLabel)
            if let tariff = flow.tariff, flow.isPriced(widget) {
                found += periods.flatMap { HomeAssistantSensor.money(of: widget, tariff: tariff, period: $0, label: widgetLabel) }
            }
        }
        for widget in flow.progressWidgets {
            let isBattery = if case .battery = widget.measure { true } else { false }
            found.append(HomeAssistantSensor(
                widget: widget.name, key: "percent", name: widget.shared.label ?? widget.name,
                quantity: isBattery ? .batteryLevel : .percent, field: .progressValue,
                precision: Self.decimals(widget.policy.levelStep)))
        }
        var seen: [String: HomeAssistantSensor] = [:]
        for sensor in found {
            guard !Self.id(sensor.widget).isEmpty else {
                let problem = "widget '\(sensor.widget)' has no letter or digit to make a Home Assistant id of"
                if !conflicts.contains(problem) { conflicts.append(problem) }
                continue
            }
            let id = uniqueID(sensor)
            if let first = seen[id] {
                conflicts.append("'\(sensor.name)' of widget \(sensor.widget) would have the id \(id) of '\(first.name)' of widget \(first.widget)")
                continue
            }
            seen[id] = sensor
            sensors.append(sensor)
        }
    }

    /// `flowbridge_power_solar_power`: the sensor's `unique_id`, and the entity id Home Assistant
    /// makes of it, `sensor.flowbridge_power_solar_power` (`default_entity_id`, and `object_id` for
    /// releases before 2025.10).
    public func uniqueID(_ sensor: HomeAssistantSensor) -> String {
        "\(nodeID)_\(Self.id(sensor.widget))_\(sensor.key)"
    }

    /// `homeassistant/sensor/flowbridge/power_solar_power/config`.
    public func configTopic(_ sensor: HomeAssistantSensor) -> String {
        "\(discoveryPrefix)/sensor/\(nodeID)/\(Self.id(sensor.widget))_\(sensor.key)/config"
    }

    /// Widgets that have sensors, in config order.
    public var widgets: [String] {
        var seen: Set<String> = []
        return sensors.map(\.widget).filter { seen.insert($0).inserted }
    }

    /// The device every sensor belongs to: "flowbridge", or "flowbridge (garage)" for another prefix.
    public var deviceName: String { nodeID == "flowbridge" ? "flowbridge" : "flowbridge (\(settings.prefix))" }

    /// The discovery config of `sensor`: what Home Assistant's MQTT sensor schema takes (full key
    /// names, not the abbreviations; `homeassistant/components/mqtt/sensor.py` and `mixins.py`).
    /// The entity id goes twice: Home Assistant 2025.10 replaced `object_id` by `default_entity_id`
    /// (a whole entity id) and stopped reading `object_id` in 2026.4; with both, it reads the new
    /// one without a deprecation warning, and an older release, which drops keys it does not know
    /// from a discovery config, still reads `object_id`.
    public func config(_ sensor: HomeAssistantSensor) -> JSONValue {
        let id = uniqueID(sensor)
        var members: [String: JSONValue] = [
            "name": .string(sensor.name),
            "unique_id": .string(id),
            "object_id": .string(id),
            "default_entity_id": .string("sensor.\(id)"),
            "state_topic": .string(settings.sensorsTopic(sensor.widget)),
            // Subscript, not a dotted name: a key may start with a digit ("1st_floor_power").
            "value_template": .string("{{ value_json['\(sensor.key)'] }}"),
            "unit_of_measurement": .string(sensor.quantity.unit),
            "state_class": .string(sensor.quantity.stateClass),
            "suggested_display_precision": .number(Double(sensor.precision)),
            "availability_topic": .string(settings.statusTopic),
            "payload_available": "online",
            "payload_not_available": "offline",
            "device": [
                "identifiers": [.string(nodeID)],
                "name": .string(deviceName),
                "manufacturer": "flowbridge",
                "model": "MQTT energy flow bridge",
                "sw_version": .string(software),
            ],
            "origin": ["name": "flowbridge", "sw_version": .string(software)],
        ]
        if let deviceClass = sensor.quantity.deviceClass { members["device_class"] = .string(deviceClass) }
        if let period = sensor.quantity.resetPeriod {
            // Null (no money counted yet) renders as nothing, which Home Assistant skips quietly;
            // "None" would be an invalid time it warns about.
            members["last_reset_value_template"] = .string("{{ value_json['\(Self.lastResetKey(period))'] or '' }}")
        }
        return .object(members)
    }

    /// The value of every sensor of `widget` in `document` and its `accounts` (and money, and
    /// lifetime accounts), by key, with each period's start as its `last_reset` when it has
    /// sensors of that period's money; nil when the widget has none.
    public func values(widget: String, document: WidgetContent, accounts: WidgetAccounts? = nil) -> JSONValue? {
        let mine = sensors.filter { $0.widget == widget }
        guard !mine.isEmpty else { return nil }
        var members: [String: JSONValue] = [:]
        for sensor in mine {
            switch sensor.field {
            case .account(let place, let account):
                members[sensor.key] = accounts?.accountsKWh[place]?[account].map { .number(PatchPolicy.quantize($0, step: 0.001)) } ?? .null
            case .lifetime(let account):
                members[sensor.key] = accounts?.lifetimeKWh?[account].map { .number(PatchPolicy.quantize($0, step: 0.001)) } ?? .null
            case .money(let money, let period):
                members[sensor.key] = accounts?.money(period).flatMap(money.value).map { .number(PatchPolicy.quantize($0, step: Self.moneyStep)) } ?? .null
            default:
                members[sensor.key] = value(sensor.field, in: document, widget: widget).map(JSONValue.number) ?? .null
            }
        }
        for period in Set(mine.compactMap(\.quantity.resetPeriod)) {
            let start = period == .day ? accounts?.dayStart ?? accounts?.money?.dayStart : accounts?.money(period)?.dayStart
            members[Self.lastResetKey(period)] = start.map { .string(RFC3339.format($0)) } ?? .null
        }
        return .object(members)
    }

    private func value(_ field: HomeAssistantSensor.Field, in document: WidgetContent, widget: String) -> Double? {
        switch (field, document) {
        case (.progressValue, .progress(let bar)):
            // The fraction was rounded to whole (or `level_step`) percent; ×100 must not show 76.00000000001.
            return bar.value.map { ($0 * 100 * 1e6).rounded() / 1e6 }
        case (.rate(let place), .flow(let flow)):
            return flow.node(configured: place, inputNames: inputNames[widget] ?? [])?.rate
        case (.level(let place), .flow(let flow)):
            return flow.node(configured: place, inputNames: inputNames[widget] ?? [])?.level
        default:
            return nil
        }
    }

    /// Whether the node is the balance of the others (`rate: balance`): its day can step back.
    static func isDerived(_ node: NodeConfig) -> Bool {
        if case .balance = node.rate { return true }
        return false
    }

    /// What a node is called when the config gives it no name.
    static func defaultName(_ place: NodePlace) -> String {
        switch place {
        case .input(let index): "Input \(index + 1)"
        case .output: "Home"
        case .storage: "Battery"
        case .exchange: "Grid"
        }
    }

    /// The id of a node whose name has no letter or digit to make one of.
    static func defaultKey(_ place: NodePlace) -> String {
        if case .input(let index) = place { return "input \(index + 1)" }
        return place.slot.rawValue
    }

    /// Decimals of an account's sensor: Wh.
    static let accountDecimals = 3

    /// The resolution of the money's values: a hundredth of a cent, finer than any amount is
    /// shown (the currency's decimals), so that an hour's cost in the Energy dashboard, a few
    /// cents, is not rounded away.
    static let moneyStep = 0.0001

    /// The key of a period's start in a widget's sensors topic, which the sensors of that
    /// period's money read as their `last_reset`: `last_reset` for the day, `last_reset_month`;
    /// no sensor's key ends like these.
    static func lastResetKey(_ period: MoneyPeriod) -> String {
        period == .day ? "last_reset" : "last_reset_\(period.rawValue)"
    }

    /// The key suffix of an account's sensor that no `total:` shows.
    static func suffix(_ account: EnergyAccount) -> String {
        switch account {
        case .production, .consumption: "energy"
        case .imported: "import"
        case .exported: "export"
        case .charged: "charged"
        case .discharged: "discharged"
        }
    }

    /// What an account's sensor is called after its node's name: `Grid import today`.
    static func words(_ account: EnergyAccount) -> String { "\(accountWords(account)) today" }

    /// What an account is called: `import`, `charged`.
    static func accountWords(_ account: EnergyAccount) -> String {
        switch account {
        case .production: "production"
        case .consumption: "consumption"
        case .imported: "import"
        case .exported: "export"
        case .charged: "charged"
        case .discharged: "discharged"
        }
    }

    /// The key suffix and the words of a node's energy sensor: what its total counts.
    static func energyWords(_ total: TotalSpec) -> (suffix: String, words: String) {
        switch total {
        case .imported: ("import", "import today")
        case .exported: ("export", "export today")
        case .charged: ("charged", "charged today")
        case .discharged: ("discharged", "discharged today")
        case .integrate, .counter, .daily: ("energy", "energy today")
        }
    }

    /// `Solar Süd` → `solar_s_d`: lower-case ASCII letters and digits, anything else one `_`,
    /// none at either end; the characters Home Assistant allows in discovery topics and entity ids.
    public static func id(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.isASCII, let ascii = Character(scalar).asciiValue,
               (ascii >= 0x30 && ascii <= 0x39) || (ascii >= 0x41 && ascii <= 0x5A) || (ascii >= 0x61 && ascii <= 0x7A)
            {
                out.append(Character(scalar).lowercased())
            } else if !out.isEmpty, out.last != "_" {
                out.append("_")
            }
        }
        while out.last == "_" { out.removeLast() }
        return out
    }

    /// The decimals a value rounded to `step` has: 10 → 0, 0.1 → 1, 0.05 → 2 (at most 3).
    static func decimals(_ step: Double) -> Int {
        var decimals = 0
        var scaled = step
        while decimals < 3, scaled > 0, (scaled - scaled.rounded()).magnitude > 1e-9 {
            scaled *= 10
            decimals += 1
        }
        return decimals
    }
}
