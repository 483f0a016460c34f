import FoundationEssentials

/// Why a saved state could not be read back.
public struct StateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

/// The engine's state as a JSON document: the day, the last readings, and every total's
/// accumulator, baseline and last sample. Written by the Daemon (atomically) and read back at start,
/// so a restart mid-day continues the day and a restart on a later day starts it at 0.
///
/// Times are seconds since 1970 as numbers, so a state read back is exactly the state written.
extension FlowEngine {
    public static let stateVersion = 1

    public func snapshot() -> JSONValue {
        var state: [String: JSONValue] = ["version": .number(Double(Self.stateVersion))]
        if let day {
            state["day"] = .string(day.date.description)
            state["day_start"] = .number(day.start.timeIntervalSince1970)
        }
        var readings: [String: JSONValue] = [:]
        for source in sources {
            if let reading = source.reading {
                readings[source.config.name] = ["value": .number(reading.value), "t": .number(reading.at.timeIntervalSince1970)]
            }
        }
        state["readings"] = .object(readings)
        var totals: [String: JSONValue] = [:]
        for widget in widgets {
            for node in widget.nodes {
                guard let total = node.total else { continue }
                totals["\(widget.config.name)/\(node.place)"] = total.json
            }
        }
        state["totals"] = .object(totals)
        return .object(state)
    }

    /// Restores a snapshot into a fresh engine, before any message. Readings of sources and totals
    /// of nodes the config no longer has, or whose kind changed, are left out. The day it restores
    /// is closed by the first event on a later day, like any midnight.
    public mutating func restore(_ state: JSONValue) throws(StateError) {
        guard let version = state["version"]?.numberValue else { throw StateError(description: "no version") }
        guard Int(version) == Self.stateVersion else { throw StateError(description: "unknown version \(JSONValue.format(version))") }
        guard let start = state["day_start"]?.numberValue, let dateText = state["day"]?.stringValue,
            let date = CivilDate(dateText)
        else { throw StateError(description: "no day") }
        let restoredDay = zone.day(containing: Date(timeIntervalSince1970: start))
        guard restoredDay.date == date else {
            throw StateError(description: "day \(date) does not start at \(JSONValue.format(start)) in \(zone.identifier)")
        }
        var restoredSources = sources
        for (name, value) in state["readings"]?.objectValue ?? [:] {
            guard let position = restoredSources.firstIndex(where: { $0.config.name == name }) else { continue }
            guard let number = value["value"]?.numberValue, let at = value["t"]?.numberValue else {
                throw StateError(description: "reading of '\(name)' is incomplete")
            }
            restoredSources[position].reading = Reading(value: number, at: Date(timeIntervalSince1970: at))
        }
        var restoredWidgets = widgets
        let saved = state["totals"]?.objectValue ?? [:]
        for position in restoredWidgets.indices {
            for node in restoredWidgets[position].nodes.indices {
                let key = "\(restoredWidgets[position].config.name)/\(restoredWidgets[position].nodes[node].place)"
                guard let spec = restoredWidgets[position].nodes[node].total?.spec, let value = saved[key] else { continue }
                if let total = try EnergyTotal(json: value, spec: spec) {
                    restoredWidgets[position].nodes[node].total = total
                }
            }
        }
        sources = restoredSources
        widgets = restoredWidgets
        day = restoredDay
    }
}

extension TotalSpec: CustomStringConvertible {
    /// The config's words for it: `integrate`, `import`, `counter:grid_in`.
    public var description: String {
        switch self {
        case .integrate: "integrate"
        case .imported: "import"
        case .exported: "export"
        case .charged: "charge"
        case .discharged: "discharge"
        case .counter(let source): "counter:\(source)"
        case .daily(let source): "daily:\(source)"
        }
    }
}

extension EnergyTotal {
    var json: JSONValue {
        var members: [String: JSONValue] = ["kind": .string(spec.description), "kwh": .number(energyKWh)]
        if let lastSample {
            members["last_t"] = .number(lastSample.at.timeIntervalSince1970)
            members["last_rate"] = .number(lastSample.rateW)
        }
        if let counter {
            members["baseline"] = counter.baseline.map(JSONValue.number)
            members["last"] = counter.last.map(JSONValue.number)
            members["carried"] = .number(counter.carried)
            members["suspect"] = counter.suspect.map(JSONValue.number)
        }
        return .object(members)
    }

    /// Reads a saved total; nil when it was saved for another kind of total (the config changed).
    init?(json: JSONValue, spec: TotalSpec) throws(StateError) {
        guard json["kind"]?.stringValue == spec.description else { return nil }
        guard let energy = json["kwh"]?.numberValue, energy.isFinite, energy >= 0 else {
            throw StateError(description: "total \(spec) has no valid kwh")
        }
        self.init(spec: spec)
        energyKWh = energy
        if let at = json["last_t"]?.numberValue, let rate = json["last_rate"]?.numberValue {
            lastSample = RateSample(at: Date(timeIntervalSince1970: at), rateW: rate)
        }
        if let track = counter {
            counter = CounterTrack(
                restartsFromZero: track.restartsFromZero, baseline: json["baseline"]?.numberValue,
                last: json["last"]?.numberValue, carried: json["carried"]?.numberValue ?? 0,
                suspect: json["suspect"]?.numberValue)
        }
    }
}
