import FlowCore
import FoundationEssentials

/// `/metrics`: the snapshot in Prometheus' text exposition format (version 0.0.4), named as
/// Prometheus asks: base units (joules, watts, seconds), `_total` on counters, no unit in a label.
///
/// Energy is a lifetime counter: the closed days kept in the state plus today's accounts, so it
/// only rises, across midnights and restarts, and `increase()` over any range is the energy of
/// that range. Money likewise, in the currency its label names.
public enum MetricsText {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render(_ snapshot: WindowSnapshot) -> String {
        var out = MetricsWriter()
        out.family("flowbridge_build_info", .gauge, "The running flowbridge's version.")
        out.sample("flowbridge_build_info", ["version": snapshot.version], 1)

        let flows = snapshot.widgets.filter { $0.todayKWh != nil }
        out.family("flowbridge_energy_joules_total", .counter, "Each flow widget's energy by account (direction), since flowbridge first counted it.")
        for widget in flows {
            for (account, energyKWh) in widget.lifetimeKWh.sorted(by: { $0.key < $1.key }) {
                out.sample("flowbridge_energy_joules_total", ["widget": widget.name, "account": account.rawValue], energyKWh * 3.6e6)
            }
        }
        out.family("flowbridge_power_watts", .gauge, "Each node's power as the widget shows it now (exchange: + importing; storage: + charging).")
        for widget in flows {
            guard case .flow(let flow)? = widget.document?.content, let factor = wattsPerUnit(flow.unit) else { continue }
            let inputNames = widget.nodes.filter { $0.place.slot == .inputs }.map(\.name)
            for (place, name) in widget.nodes {
                guard let rate = flow.node(configured: place, inputNames: inputNames)?.rate, rate.isFinite else { continue }
                // A series per node of the config: its name where no other node has it, else its place.
                let label = name.flatMap { name in widget.nodes.filter { $0.name == name }.count == 1 ? name : nil } ?? place.description
                out.sample("flowbridge_power_watts", ["widget": widget.name, "node": label, "slot": place.slot.rawValue], rate * factor)
            }
        }

        out.family("flowbridge_import_cost_total", .counter, "Each priced widget's cost of imported energy, since flowbridge first counted it.")
        out.family("flowbridge_export_earnings_total", .counter, "Each priced widget's earnings of exported energy, since flowbridge first counted it.")
        out.family("flowbridge_standing_charge_total", .counter, "Each priced widget's standing charge, since flowbridge first counted it.")
        for widget in flows {
            guard let money = widget.lifetimeMoney else { continue }
            let labels = ["widget": widget.name, "currency": money.currencyCode]
            out.sample("flowbridge_import_cost_total", labels, money.importCost)
            out.sample("flowbridge_export_earnings_total", labels, money.exportEarnings)
            out.sample("flowbridge_standing_charge_total", labels, money.standingCharge)
        }
        out.family("flowbridge_energy_price", .gauge, "The price in force per kWh, by direction, in the labelled currency.")
        for price in snapshot.prices {
            guard let value = price.pricePerKWh else { continue }
            out.sample("flowbridge_energy_price", ["direction": price.account.rawValue, "currency": price.currencyCode], value)
        }

        out.family("flowbridge_source_reading_age_seconds", .gauge, "Seconds since each source's last reading.")
        for source in snapshot.sources {
            guard let at = source.readingAt else { continue }
            out.sample("flowbridge_source_reading_age_seconds", ["source": source.name], snapshot.age(of: at))
        }
        out.family("flowbridge_source_stale", .gauge, "1 while a source's reading is older than its stale_after or it never reported.")
        for source in snapshot.sources {
            out.sample("flowbridge_source_stale", ["source": source.name], source.freshness == .stale || source.freshness == .silent ? 1 : 0)
        }
        out.family("flowbridge_source_readings_total", .counter, "Readings each source decoded.")
        for source in snapshot.sources { out.sample("flowbridge_source_readings_total", ["source": source.name], Double(source.readings)) }
        out.family("flowbridge_source_rejected_payloads_total", .counter, "Payloads each source could not decode or that were too large.")
        for source in snapshot.sources { out.sample("flowbridge_source_rejected_payloads_total", ["source": source.name], Double(source.rejected)) }

        out.family("flowbridge_sink_deliveries_total", .counter, "Each sink's deliveries by result.")
        for sink in snapshot.sinks {
            for (result, count) in sink.health?.results ?? [] {
                out.sample("flowbridge_sink_deliveries_total", ["sink": sink.name, "result": result.rawValue], Double(count))
            }
        }
        out.family("flowbridge_sink_waiting", .gauge, "1 while something waits to be delivered by a sink (a retry, a backoff).")
        for sink in snapshot.sinks {
            guard let health = sink.health else { continue }
            out.sample("flowbridge_sink_waiting", ["sink": sink.name], health.waiting ? 1 : 0)
        }

        out.family("flowbridge_broker_connected", .gauge, "1 while the broker connection is up.")
        out.sample("flowbridge_broker_connected", [:], snapshot.broker.connectedSince == nil ? 0 : 1)
        out.family("flowbridge_broker_reconnects_total", .counter, "Connections to the broker after the first.")
        out.sample("flowbridge_broker_reconnects_total", [:], Double(snapshot.broker.reconnects))
        return out.text
    }

    /// Watts per unit of a flow document's rates: `W` and `kW`; nil for any other unit the
    /// config chose (no power in watts to be had).
    static func wattsPerUnit(_ unit: String?) -> Double? {
        switch unit ?? "W" {
        case "W": 1
        case "kW": 1000
        case "MW": 1e6
        default: nil
        }
    }
}

/// Writes families and samples in the text format, escaping label values.
struct MetricsWriter {
    enum Kind: String { case counter, gauge }

    private(set) var text = ""

    mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escaped($0.value))\"" }.joined(separator: ",") + "}"
        }
        text += " \(Self.number(value))\n"
    }

    /// A label value: backslash, double quote and line feed escaped, as the format asks.
    static func escaped(_ value: String) -> String {
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
