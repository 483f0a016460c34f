import Configuration
import FlowCore
import FoundationEssentials
import Mosquitto
import Persistence
import Window
import Platform
import Runtime

/// What `flowbridge check` prints for a good config: which topic feeds which slot, with which sign
/// and unit, so a user sees a flipped sign before the widget shows it.
package struct ConfigSummary {
    let config: DaemonConfig
    let zone: any LocalTimeZone
    /// The state file a run would use here.
    let statePath: String
    /// When `check` runs: which price applies now.
    let now: Date
    /// The day book a run would write here; nil: not reported.
    let bookPath: String?

    package init(config: DaemonConfig, zone: any LocalTimeZone, statePath: String, bookPath: String? = nil, now: Date = Date()) {
        self.config = config
        self.zone = zone
        self.statePath = statePath
        self.bookPath = bookPath
        self.now = now
    }

    package var text: String {
        var lines: [String] = []
        let flow = config.flow
        lines.append("config OK: \(Self.counts(config)); day in \(zone.identifier); broker \(config.mqtt.host):\(config.mqtt.port)\(config.mqtt.tls.map { $0.insecure ? " (TLS, not verified)" : " (TLS)" } ?? "")")
        if config.mqtt.tls?.insecure == true { lines.append("warning: \(TLSOptions.insecureWarning)") }
        for source in flow.sources {
            guard case .pattern(let pattern) = source.decoder.format, let nested = pattern.nestedRepetition else { continue }
            lines.append("warning: source '\(source.name)': the regex '\(pattern.pattern)' repeats a repetition (\(nested)): a payload that nearly matches takes time that doubles with each character; write it without the nesting, such as (\\d+) for (\\d+)+")
        }
        lines.append("state kept in \(statePath)")
        if let window = config.window {
            lines.append("window (status page, /metrics, /api/v1) on http://\(window.listen)/: \(window.whoMayLook)")
        } else {
            lines.append("window off (http: {listen: 127.0.0.1:8787} turns it on)")
        }
        lines += bookLines
        let sources = Dictionary(flow.sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for widget in flow.widgets {
            lines.append("")
            lines.append("widget \(widget.name) (flow, unit \(widget.unit ?? "none")): \(describe(widget.policy))\(widget.staleMarker ? "" : "; held slots not marked")")
            for (place, node) in widget.nodes {
                let title = "  \(place) \(node.name.map { "\"\($0)\"" } ?? "")"
                lines.append(title)
                lines.append("      rate  = \(describe(node.rate, sources: sources, place: place))")
                if let level = node.level { lines.append("      level = \(describe(level, sources: sources))") }
                if let total = node.total { lines.append("      total = \(describe(total, sources: sources))") }
                // Every account the node counts, shown or not: what its sensor and the day's line read.
                let accounts = node.accountTotals(in: place.slot).map { "\($0.account) from \(describe($0.total, sources: sources))" }
                lines.append("      counts \(accounts.joined(separator: "; "))")
                lines.append("      when stale: \(node.whenStale.rawValue)")
            }
            lines += pushLines(widget: widget.name)
        }
        for widget in flow.progressWidgets {
            lines.append("")
            lines += describe(widget, in: flow, sources: sources)
        }
        lines += tariffLines
        lines += outputLines
        return lines.joined(separator: "\n") + "\n"
    }

    /// `6 sources, 2 widgets` (flow and progress widgets alike): what `check` and `check --listen`
    /// say first.
    static func counts(_ config: DaemonConfig) -> String {
        "\(counted(config.flow.sources.count, "source")), \(counted(config.flow.widgetNames.count, "widget"))"
    }

    /// When a widget is pushed, and how its values are rounded.
    func describe(_ policy: PatchPolicyConfig) -> String {
        "pushes at least \(JSONValue.format(policy.minIntervalSeconds))s apart, \(policy.settleSeconds > 0 ? "each once the readings of \(JSONValue.format(policy.settleSeconds))s have settled" : "without settling"), rates to \(JSONValue.format(policy.rateStep)) with a deadband of \(JSONValue.format(policy.rateDeadband)), totals to \(JSONValue.format(policy.totalStep)) kWh"
    }

    /// A progress widget: what its bar and rows are made of, and from which flow widget.
    func describe(_ widget: ProgressWidgetConfig, in flow: FlowConfig, sources: [String: SourceConfig]) -> [String] {
        let reads = flow.flowWidget(for: widget)
        let from = reads.map { ", reads flow widget \($0.name)" } ?? ""
        var lines = ["widget \(widget.name) (progress of \(widget.measure.word)\(from)): \(describe(widget.policy)), the bar to \(JSONValue.format(widget.policy.levelStep)) %\(widget.staleMarker ? "" : "; held readings not marked")"]
        let name = reads?.name ?? ""
        switch widget.measure {
        case .battery(let gauge):
            guard let node = gauge.node(besides: reads), let level = node.level else { break }
            lines.append("  value = level \(describe(level, sources: sources)) / 100")
            lines.append("  rate  = \(describe(node.rate, sources: sources, place: .storage)): the trend and Charging / Draining")
            if let storage = reads?.storage, storage.rate == node.rate, let total = storage.total {
                lines.append("  today = the storage total of \(name) (\(total))")
            }
            if let capacity = gauge.capacityKWh {
                lines.append("  capacity \(JSONValue.format(capacity)) kWh: Full in / Empty in; while charging, start_date and end_date advance the bar on the phone")
            }
        case .selfSufficiency:
            let exchange = reads?.exchange?.total.map(\.description) ?? "none"
            let output = reads?.output?.total.map(\.description) ?? "none"
            lines.append("  value = 1 − import today / output today of \(name) (exchange total \(exchange), output total \(output)), within 0…1")
        case .productionGoal(let goal):
            lines.append("  value = today's production of \(name) (its inputs' totals) / \(JSONValue.format(goal)) kWh, at most 1")
        case .cost(let budget, let period):
            let amount = flow.tariff.map { $0.currency.text(budget) } ?? JSONValue.format(budget)
            let span = switch period {
            case .day: "today's"
            case .month: "the month's (its closed days in the day book, and today's)"
            case .billing: "the billing month's (from day \(flow.billingDay); its closed days in the day book, and today's)"
            }
            lines.append("  value = \(span) net cost of \(name) (import − export + the standing charge so far) / \(amount), within 0…1")
        }
        return lines
    }

    func describe(_ rate: RateSpec, sources: [String: SourceConfig], place: NodePlace) -> String {
        let meaning: String = switch place.slot {
        case .exchange: "(+ importing, − exporting)"
        case .storage: "(+ filling, − draining)"
        case .inputs, .output: "(magnitude; below 0 shows 0)"
        }
        switch rate {
        case .balance:
            return "balance: Σ inputs + exchange − storage, at least 0; a stale input counts 0 W, a stale exchange or storage makes it unknown"
        case .sum(let terms):
            let parts = terms.map { term in
                (term.negated ? "− " : "+ ") + describe(term.source, sources: sources)
            }
            return parts.joined(separator: " ") + " " + meaning
        }
    }

    func describe(_ name: String, sources: [String: SourceConfig]) -> String {
        guard let source = sources[name] else { return name }
        var details = [source.topic.description]
        if let path = source.decoder.path { details.append("json \(path)") }
        details.append(source.unit.rawValue)
        if source.scale != 1 { details.append("× \(JSONValue.format(source.scale))") }
        if source.invert { details.append("inverted") }
        if let direction = source.direction { details.append(describe(direction)) }
        if source.decoder.decimalComma { details.append("decimal comma") }
        if let stale = source.staleAfterSeconds {
            if stale != SourceConfig.defaultStaleAfterSeconds { details.append("stale after \(JSONValue.format(stale))s") }
        } else {
            details.append("never stale")
        }
        if source.combine == .sum { details.append("sum of its topics") }
        if source.maxPayloadBytes != SourceConfig.defaultMaxPayloadBytes { details.append("payloads up to \(source.maxPayloadBytes) bytes") }
        return "\(name) [\(details.joined(separator: ", "))]"
    }

    /// `+ while battery_charging is 1, − while battery_discharging is 1`, `the sign of grid_meter`.
    func describe(_ direction: DirectionSource) -> String {
        switch direction {
        case .signOf(let source):
            return "the sign of \(source)"
        case .flags(let positive, let negative):
            let parts = [positive.map { "+ while \($0) is 1" }, negative.map { "− while \($0) is 1" }].compactMap { $0 }
            return parts.joined(separator: ", ")
        }
    }

    func describe(_ total: TotalSpec, sources: [String: SourceConfig]) -> String {
        switch total {
        case .integrate: "integral of the rate since local midnight (kWh)"
        case .imported: "integral of the importing part since local midnight (kWh)"
        case .exported: "integral of the exporting part since local midnight (kWh)"
        case .charged: "integral of the filling part since local midnight (kWh)"
        case .discharged: "integral of the draining part since local midnight (kWh)"
        case .counter(let source): "lifetime counter \(describe(source, sources: sources)) − its value at local midnight"
        case .daily(let source): "device's daily counter \(describe(source, sources: sources)), kept to local midnight"
        }
    }
}
