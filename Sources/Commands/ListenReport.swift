import Configuration
import FlowCore
import FoundationEssentials
import Persistence
import Platform
import Runtime

/// What `check --listen` learns: per source what came (messages, readings that failed, the last
/// value after unit and sign, how old), and per widget what the sign checks say. Messages go
/// through the engine itself, so a value shown here is the value the daemon would use.
struct ListenReport {
    /// One source's messages.
    struct Watch {
        var messages = 0
        var lastMessage: Date?
        var retainedOnly = true
        /// The last payload the engine could not use, to show what it looked like.
        var lastRejected: [UInt8]?
        /// When a live (not retained) message last gave a reading: live readings feed the sign checks.
        var liveReadingAt: Date?
        /// The payloads that did not decode, by kind of error, with the last one's text: what to change.
        var decodeErrors: [PayloadError.Kind: (count: Int, last: PayloadError)] = [:]
    }

    let config: DaemonConfig
    let zone: any LocalTimeZone
    private(set) var engine: FlowEngine
    private(set) var watches: [String: Watch]
    private(set) var signChecks: [SignCheck]
    private(set) var messages = 0

    init(config: DaemonConfig, zone: any LocalTimeZone) {
        self.config = config
        self.zone = zone
        engine = FlowEngine(config: config.flow, zone: zone)
        watches = Dictionary(uniqueKeysWithValues: config.flow.sources.map { ($0.name, Watch()) })
        signChecks = config.flow.widgets.map(SignCheck.init(widget:))
    }

    /// Takes a message; returns the engine's diagnostics (undecodable payloads, implausible values)
    /// for the log.
    mutating func receive(topic: String, payload: [UInt8], retained: Bool, at now: Date) -> [Diagnostic] {
        messages += 1
        let before = engine.sourceStats
        let outputs = engine.tick(through: now) + engine.receive(topic: topic, payload: payload, at: now, retained: retained)
        let after = engine.sourceStats
        for source in config.flow.sources where source.topic.matches(topic) {
            var watch = watches[source.name]!
            watch.messages += 1
            watch.lastMessage = now
            watch.retainedOnly = watch.retainedOnly && retained
            if !retained, (after[source.name]?.readings ?? 0) > (before[source.name]?.readings ?? 0) { watch.liveReadingAt = now }
            watches[source.name] = watch
        }
        // What the engine refused, and why, as it says it: nothing is decoded twice.
        for case .refused(let refusal) in outputs where refusal.isRejection {
            guard var watch = watches[refusal.source] else { continue }
            watch.lastRejected = payload
            if case .undecodable(let error) = refusal.reason {
                watch.decodeErrors[error.kind] = ((watch.decodeErrors[error.kind]?.count ?? 0) + 1, error)
            }
            watches[refusal.source] = watch
        }
        observe(at: now)
        return Self.diagnostics(outputs)
    }

    /// Lets a second pass: readings turn stale, and the sign checks take the moment.
    mutating func tick(at now: Date) -> [Diagnostic] {
        let outputs = engine.tick(through: now)
        observe(at: now)
        return Self.diagnostics(outputs)
    }

    static func diagnostics(_ outputs: [FlowEngine.Output]) -> [Diagnostic] {
        outputs.compactMap { if case .diagnostic(let diagnostic) = $0 { diagnostic } else { nil } }
    }

    /// The readings that are live now: from a live message, and not stale.
    func liveValues(at now: Date) -> [String: Double] {
        var values: [String: Double] = [:]
        let readings = engine.readings
        for source in config.flow.sources {
            guard let at = watches[source.name]?.liveReadingAt, let reading = readings[source.name],
                  now.timeIntervalSince(at) < source.staleAfterSeconds ?? .infinity
            else { continue }
            values[source.name] = reading.value
        }
        return values
    }

    mutating func observe(at now: Date) {
        let values = liveValues(at: now)
        guard !values.isEmpty else { return }
        for index in signChecks.indices { signChecks[index].observe(values) }
    }

    /// Sources that never gave a reading: silent, or only ever undecodable or "no value". A
    /// schedule counts once one was read, though none of its slots covers now.
    var silentSources: [SourceConfig] {
        let stats = engine.sourceStats
        return config.flow.sources.filter { engine.readings[$0.name] == nil && ($0.schedule == nil || (stats[$0.name]?.readings ?? 0) == 0) }
    }

    /// For a source with `direction:` whose readings came while a source of its direction sent
    /// no value: those sources, by name. Nil otherwise.
    func unsigned(_ source: SourceConfig) -> [String]? {
        guard let direction = source.direction, (engine.sourceStats[source.name]?.readings ?? 0) > 0 else { return nil }
        let readings = engine.readings
        let missing = direction.sources.filter { readings[$0] == nil }
        return missing.isEmpty ? nil : missing
    }

    /// Every verdict that finds a sign wrong, with its widget.
    var wrongSigns: [(widget: String, verdict: SignCheck.Verdict)] {
        zip(config.flow.widgets, signChecks).flatMap { widget, check in
            check.verdicts.filter { $0.outcome == .wrong }.map { (widget.name, $0) }
        }
    }

    // MARK: - Text

    /// The report, as printed at the end of the listen.
    func text(broker: String, seconds: Double, connection: TimedListen.Outcome, at now: Date) -> String {
        var lines: [String] = []
        lines.append("listened \(JSONValue.format(seconds.rounded())) s to \(broker): \(counted(messages, "message")) on the sources' topics")
        if !connection.connected {
            lines.append("never connected to the broker\(connection.lastProblem.map { ": \($0)" } ?? "")")
        }
        for refusal in connection.refusedSubscriptions {
            lines.append("the broker refused the subscription to \(refusal.filter): \(refusal.reason) (is its ACL for this user right?)")
        }
        lines.append("")
        var table = [["source", "topic", "messages", "unusable", "last value", "age"]]
        let stats = engine.sourceStats
        let readings = engine.readings
        for source in config.flow.sources {
            let watch = watches[source.name]!
            let value: String
            if let reading = readings[source.name] {
                value = Self.format(reading.value, unit: source.unit)
            } else if watch.messages == 0 {
                value = "never reported"
            } else if unsigned(source) != nil {
                value = "no direction yet"
            } else {
                value = "no reading yet"
            }
            let age = watch.lastMessage.map { Self.age(now.timeIntervalSince($0)) + (watch.retainedOnly ? " (retained)" : "") } ?? "-"
            table.append([source.name, source.topic.description, "\(watch.messages)", "\(stats[source.name]?.rejected ?? 0)", value, age])
        }
        lines += Self.columns(table).map { "  " + $0 }
        for source in config.flow.sources {
            let watch = watches[source.name]!
            let rejected = stats[source.name]?.rejected ?? 0
            let noReading = stats[source.name]?.noReading ?? 0
            if let payload = watch.lastRejected {
                lines.append("  \(source.name): \(rejected) unusable, the last: \(Self.excerpt(payload)) (the log above says why)")
            }
            for kind in PayloadError.Kind.allCases {
                guard let (count, last) = watch.decodeErrors[kind] else { continue }
                lines.append("  \(source.name): \(counted(count, "message")) \(kind.rawValue): \(last)")
            }
            if readings[source.name] == nil, noReading > 0 {
                lines.append("  \(source.name): \(counted(noReading, "message")) said \"no value\" (null, nan, unavailable, empty)")
            }
            if let withoutField = stats[source.name]?.withoutField, withoutField > 0, let path = source.decoder.path {
                let share = readings[source.name] == nil ? "none of them had it" : "the topic carries other messages too (fine when it is a mix, such as Shelly's events/rpc)"
                lines.append("  \(source.name): \(counted(withoutField, "message")) without the field \(path); \(share)")
            }
            if let missing = unsigned(source) {
                lines.append("  \(source.name): its direction never came (\(missing.map { "'\($0)'" }.joined(separator: ", ")) sent no value): its \(counted(stats[source.name]?.readings ?? 0, "reading")) had no sign, so the nodes it feeds were not shown and counted nothing")
            }
            if source.schedule != nil { lines += scheduleLines(source, at: now) }
            if let oversized = stats[source.name]?.oversized, oversized > 0 {
                lines.append("  \(source.name): \(counted(oversized, "message")) larger than max_payload (\(FileIO.describe(bytes: source.maxPayloadBytes))), not read")
            }
        }
        for (widget, check) in zip(config.flow.widgets, signChecks) {
            lines.append("")
            lines.append("widget \(widget.name): signs")
            let names = Dictionary(uniqueKeysWithValues: widget.nodes.map { ($0.place, $0.node.name) })
            for verdict in check.verdicts {
                let place = (names[verdict.place] ?? nil).map { "\($0) (\(verdict.place))" } ?? verdict.place.description
                lines.append("  \(place), \(verdict)")
            }
            // What the listen counted, every direction: a counter that does not move shows here.
            if let accounts = engine.accountTotals(ofWidget: widget.name) {
                lines.append("  counted while listening: \(AccountBalance(accountsKWh: accounts).sides)")
            }
            if let money = engine.money(ofWidget: widget.name) { lines += moneyLines(money) }
        }
        lines.append("")
        let silent = silentSources
        if silent.isEmpty {
            lines.append("every source reported")
        } else {
            lines.append("\(counted(silent.count, "source")) never reported a value:")
            for source in silent {
                let watch = watches[source.name]!
                let refusal = connection.refusedSubscriptions.first { $0.filter == source.topic.description }
                let why = if let refusal {
                    "the broker refused the subscription to \(source.topic): \(refusal.reason)"
                } else if watch.messages == 0 {
                    "no message on \(source.topic): is the topic right? (mosquitto_sub -t '#' -v shows what the broker carries)"
                } else if unsigned(source) != nil {
                    "its readings came, its direction did not (above)"
                } else {
                    "\(counted(watch.messages, "message")), none a value flowbridge can use"
                }
                lines.append("  \(source.name): \(why)")
            }
        }
        // One line per fix, with the checks that call for it.
        var fixes: [(fix: String, where: [String])] = []
        for (widget, verdict) in wrongSigns {
            let place = "widget \(widget) \(verdict.place) (\(verdict.check.rawValue))"
            let fix = verdict.fix ?? ""
            if let index = fixes.firstIndex(where: { $0.fix == fix }) { fixes[index].where.append(place) } else { fixes.append((fix, [place])) }
        }
        if fixes.isEmpty {
            lines.append("no sign looks wrong" + (silent.isEmpty ? "" : " among the sources that reported"))
        }
        // A source that never reported is left out of the balance, and a missing production looks
        // just like a flipped battery or grid: the fix is then to make it report, first.
        let caveat = silent.isEmpty
            ? ""
            : "; judged without \(silent.map(\.name).joined(separator: ", ")), which never reported: make every source report and listen again before flipping anything"
        for (fix, places) in fixes {
            lines.append("a sign looks wrong: \(fix); found by \(places.joined(separator: ", "))\(caveat)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The slots a schedule source sent, as the engine holds them (the base price, before fees
    /// and VAT; slots that ended before the energy still to be priced are let go), at most a
    /// day's 15-minute slots and then how many more.
    func scheduleLines(_ source: SourceConfig, at now: Date) -> [String] {
        let slots = engine.scheduleSlots(ofSource: source.name)
        guard let first = slots.first, let last = slots.last else {
            let why = config.flow.tariff.map { [$0.importPrice, $0.exportPrice].contains { $0?.base.sourceName == source.name } } == true
                ? "no slot received" : "no tariff names it, so its slots are not kept"
            return ["  \(source.name): schedule: \(why)"]
        }
        var lines = ["  \(source.name): schedule of \(counted(slots.count, "slot")) from \(zone.clockText(at: first.start, today: now)) to \(zone.clockText(at: last.end, today: now)) (local time, per kWh before fees and VAT):"]
        let shown = 96
        for slot in slots.prefix(shown) {
            let price = JSONValue.format((slot.basePerKWh * 10000).rounded() / 10000)
            let current = slot.start <= now && now < slot.end ? "  (now)" : ""
            lines.append("    \(zone.clockText(at: slot.start, today: now))–\(zone.clockText(at: slot.end, today: slot.start))  \(price)\(current)")
        }
        if slots.count > shown { lines.append("    … and \(counted(slots.count - shown, "slot")) more, to \(zone.clockText(at: last.end, today: now))") }
        return lines
    }

    /// What the listen priced, the prices now, and the energy that had no price (the log above
    /// says why).
    func moneyLines(_ money: MoneyReport) -> [String] {
        let currency = money.currency
        var lines = ["  priced while listening: import \(currency.text(money.importCost)), export \(currency.text(-money.exportEarnings))"]
        var prices = ["import \(money.importPricePerKWh.map(currency.priceText) ?? "unknown (no price yet)")"]
        if config.flow.tariff?.exportPrice != nil {
            prices.append("export \(money.exportPricePerKWh.map(currency.priceText) ?? "unknown (no price yet)")")
        }
        lines.append("  price now: \(prices.joined(separator: ", "))")
        let unpriced = money.shownUnpricedKWh
        if !unpriced.isEmpty {
            let parts = unpriced.keys.sorted().map { "\($0) \(JSONValue.format(PatchPolicy.quantize(unpriced[$0]!, step: 0.001))) kWh" }
            lines.append("  unpriced while listening: \(parts.joined(separator: ", ")): energy that flowed without a price, counted apart")
        }
        return lines
    }

    /// `+1200 W`, `0.216 kWh`, `76.5 %`: the value in flowbridge's units, with the widget's sign.
    static func format(_ value: Double, unit: SourceUnit) -> String {
        switch unit.quantity {
        case .power: (value > 0 ? "+" : "") + JSONValue.format((value * 10).rounded() / 10) + " W"
        case .energy: JSONValue.format((value * 1000).rounded() / 1000) + " kWh"
        case .level: JSONValue.format((value * 10).rounded() / 10) + " %"
        case .price: JSONValue.format((value * 10000).rounded() / 10000) + " per kWh"
        }
    }

    /// `4 s`, `3 min`, `2 h`.
    static func age(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded()))
        if whole < 120 { return "\(whole) s" }
        if whole < 7200 { return "\(whole / 60) min" }
        return "\(whole / 3600) h"
    }

    /// A payload as text, cut at 60 characters, on one line, escaped (`PrintableText`).
    static func excerpt(_ payload: [UInt8]) -> String {
        guard !payload.isEmpty else { return "(empty)" }
        let text = PrintableText.escaped(String(decoding: payload.prefix(60), as: UTF8.self))
        return "'\(text)\(payload.count > 60 ? "…" : "")'"
    }

    /// Rows padded to their columns' widths.
    static func columns(_ rows: [[String]]) -> [String] {
        let widths = rows.reduce(into: [Int](repeating: 0, count: rows.first?.count ?? 0)) { widths, row in
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(to: widths[index])
            }.joined(separator: "  ")
        }
    }
}
