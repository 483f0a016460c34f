import FoundationEssentials

/// How a message's reading is taken.
enum ReadingKind: Sendable, Equatable {
    /// Live: it counts for everything.
    case live
    /// The broker's retained copy, of unknown age: stale at once, never integrated.
    case retained
    /// Dated before the latest event: its rate may show, it counts no energy.
    case late
}

extension FlowEngine {
    /// What the engine knows of one source: its reading (per topic for `combine: sum`), whether it
    /// spoke at all, and what it sent that could not be read.
    struct SourceState: Sendable {
        /// No more topics than this per `combine: sum` source: a filter that matches more is a
        /// mistake (`#` on a busy broker), and the memory stays bounded.
        static let maxTopics = 64

        /// The source's config, behind one reference: it is read at every message, and a copy of
        /// its texts and arrays retained each of them.
        final class Setup: Sendable {
            let config: SourceConfig
            init(_ config: SourceConfig) { self.config = config }
        }

        let setup: Setup
        var config: SourceConfig { setup.config }
        /// The reading: the latest (`combine: latest`), or the sum of the topics' readings that
        /// were fresh at the latest of them (`combine: sum`): what `when_stale: hold` keeps showing.
        var reading: Reading?
        /// `combine: sum`: the latest reading of each matching topic.
        var topics: [String: Reading] = [:]
        /// When a value last arrived (live or retained; a restored reading's own time): the stale
        /// marker and its "no reading since" count from here.
        var lastValueAt: Date?
        /// Any message at all since the start, even one that could not be read.
        var heard = false
        /// Warned about as silent since the subscription.
        var reportedSilent = false
        var stats = SourceStats()
        var fieldWatch = FieldWatch()

        init(config: SourceConfig) { setup = Setup(config) }

        /// Whether a reading is stale at `now` for a source stale after `staleAfter` seconds.
        static func isStale(_ reading: Reading, at now: Date, after staleAfter: Double?) -> Bool {
            guard let staleAfter else { return false }
            return now.timeIntervalSince(reading.at) >= staleAfter
        }

        func isStale(_ reading: Reading, at now: Date) -> Bool { Self.isStale(reading, at: now, after: config.staleAfterSeconds) }

        /// The reading `topic` has now, for its source's kind.
        func current(_ topic: String) -> Reading? {
            config.combine == .sum ? topics[topic] : reading
        }

        /// Takes a decoded value from `topic`. Returns false when it changes nothing: a retained
        /// copy while a fresh reading exists (the broker re-sends it on every reconnect), or a late
        /// reading older than the one the source has.
        mutating func take(_ value: Double, topic: String, at now: Date, kind: ReadingKind) -> Bool {
            var at = now
            switch kind {
            case .live:
                break
            case .retained:
                if let current = current(topic), !isStale(current, at: now) { return false }
                // Otherwise the copy may be hours old: stale at once.
                at = now.addingTimeInterval(-(config.staleAfterSeconds ?? 0))
            case .late:
                if let current = current(topic), current.at > now { return false }
            }
            stats.readings += 1
            lastValueAt = max(lastValueAt ?? now, now)
            if config.combine == .sum {
                topics[topic] = Reading(value: value, at: at)
                recombine()
            } else {
                reading = Reading(value: value, at: at)
            }
            return true
        }

        /// `combine: sum`: the reading from the topics, as of the latest of them.
        mutating func recombine() {
            guard let latest = topics.values.map(\.at).max() else {
                reading = nil
                return
            }
            let staleAfter = config.staleAfterSeconds ?? .infinity
            var sum = 0.0
            for part in topics.values where latest.timeIntervalSince(part.at) < staleAfter { sum += part.value }
            reading = Reading(value: sum, at: latest)
        }

        /// The wall clock stepped by `seconds` without that time passing: ages count what really passed.
        mutating func shift(by seconds: Double) {
            reading?.at.addTimeInterval(seconds)
            for topic in topics.keys { topics[topic]?.at.addTimeInterval(seconds) }
            lastValueAt?.addTimeInterval(seconds)
            fieldWatch.shift(by: seconds)
        }

        /// Takes over what the same source of a replaced engine knew of the connection.
        mutating func adoptSession(from old: SourceState) {
            heard = old.heard
            reportedSilent = old.reportedSilent
            if let reading, let heardAt = old.lastValueAt, heardAt > reading.at { lastValueAt = heardAt }
        }
    }

    // MARK: - Freshness
    //
    // Read through the engine, property by property: a call on `sources[i]` itself copies the
    // whole source state (its config's texts and arrays retained and released), per message.

    func isStale(source position: Int, at now: Date) -> Bool {
        guard let reading = sources[position].reading else { return false }
        return SourceState.isStale(reading, at: now, after: sources[position].config.staleAfterSeconds)
    }

    /// The source's number at `now`; nil before its first reading. A `combine: sum` source that
    /// is not stale reads the sum of its fresh topics: a silent inverter reads 0 W.
    func value(ofSource position: Int, at now: Date) -> Double? {
        guard let reading = sources[position].reading else { return nil }
        guard sources[position].config.combine == .sum, !isStale(source: position, at: now) else { return reading.value }
        let staleAfter = sources[position].config.staleAfterSeconds
        var sum = 0.0
        for part in sources[position].topics.values where !SourceState.isStale(part, at: now, after: staleAfter) { sum += part.value }
        return sum
    }

    /// True once no value has arrived for `stale_after`: the meter went silent. (A retained copy is
    /// stale at once, but its source is silent only once a live update is overdue.)
    func isSilent(source position: Int, at now: Date) -> Bool {
        guard let staleAfter = sources[position].config.staleAfterSeconds, let heardAt = sources[position].lastValueAt else { return false }
        return now.timeIntervalSince(heardAt) >= staleAfter
    }

    // MARK: - Readings

    /// Plausible energy counters: anything beyond is a broken device or a wrong unit.
    static let maxEnergyKWh = 1_000_000_000.0

    /// Decodes a payload into the source's reading. Returns false when it changed no reading.
    mutating func accept(
        _ payload: [UInt8], topic: String, for position: Int, at now: Date, kind: ReadingKind, into out: inout [Output]
    ) -> Bool {
        let setup = sources[position].setup  // one retain; `source` is read in place
        var source: SourceConfig { setup.config }
        hear(position, topic: topic, at: now, into: &out)
        guard payload.count <= source.maxPayloadBytes else {
            sources[position].stats.oversized += 1
            let count = sources[position].stats.oversized
            note(.warning, key: "oversize:\(source.name)", at: now, into: &out) {
                "source '\(source.name)' (topic \(topic)): a payload of \(payload.count) bytes is beyond its max_payload (\(source.maxPayloadBytes) bytes); not read (\(count) so far)"
            }
            return false
        }
        let decoded = source.decoder.decode(payload)
        if source.decoder.path != nil { watchField(position, missing: decoded == .noField, at: now, into: &out) }
        let problem: String
        switch decoded {
        case .noReading:
            sources[position].stats.noReading += 1
            return false
        case .noField:
            sources[position].stats.withoutField += 1
            return false
        case .invalid(let why):
            problem = why
        case .value(let raw):
            let value = source.convert(raw)
            switch source.unit.quantity {
            case .power where abs(value) > source.maxPowerW:
                problem = "\(JSONValue.format(value.rounded())) W is beyond the source's max_power (\(JSONValue.format(source.maxPowerW)) W): a glitch, or a wrong unit or scale (a site that large says so with max_power)"
            case .energy where value < 0 || value > Self.maxEnergyKWh:
                problem = "\(JSONValue.format(value)) kWh is not a plausible energy counter"
            case .level where !(0...100).contains(value):
                problem = "\(JSONValue.format(value)) % is outside 0…100"
            default:
                if source.combine == .sum, sources[position].topics[topic] == nil,
                    sources[position].topics.count >= SourceState.maxTopics
                {
                    note(.warning, key: "topics:\(source.name)", at: now, into: &out) {
                        "source '\(source.name)' (topic \(source.topic)): \(topic) is left out of the sum, which reads at most \(SourceState.maxTopics) topics; narrow the topic filter"
                    }
                    return false
                }
                return sources[position].take(value, topic: topic, at: now, kind: kind)
            }
        }
        sources[position].stats.rejected += 1
        let count = sources[position].stats.rejected
        note(.warning, key: "reject:\(source.name)", at: now, into: &out) {
            "source '\(source.name)' (topic \(topic)): \(problem); reading ignored (\(count) so far)"
        }
        return false
    }

    /// Brings the totals of widget `position` up to date with a new reading of `source`.
    mutating func account(_ source: Int, in position: Int, at now: Date, integrating: Bool, into out: inout [Output]) {
        for node in integrating ? widgets[position].integrateOn[source] ?? [] : [] {
            let state = widgets[position].nodes[node]
            guard let rate = integrationRate(of: state, inWidget: position, at: now) else {
                // Unknown from here (a balance with a stale term): nothing counts across the gap.
                widgets[position].nodes[node].total?.interrupt()
                continue
            }
            widgets[position].nodes[node].total?.integrate(rateW: rate, at: now, maxGapSeconds: state.maxGapSeconds)
        }
        guard let reading = sources[source].reading else { return }
        let maxPowerW = sources[source].config.maxPowerW
        for node in widgets[position].nodes.indices where widgets[position].nodes[node].counter == source {
            if let recount = widgets[position].nodes[node].total?.read(counterKWh: reading.value, at: now, maxPowerW: maxPowerW) {
                report(recount, of: source, at: now, into: &out)
            }
        }
    }

    /// Says what a confirmed counter jump or reset did, and why.
    mutating func report(_ recount: CounterTrack.Recount, of position: Int, at now: Date, into out: inout [Output]) {
        let source = sources[position].config
        let from = JSONValue.format(PatchPolicy.quantize(recount.fromKWh, step: 0.001))
        let to = JSONValue.format(PatchPolicy.quantize(recount.toKWh, step: 0.001))
        let kept = JSONValue.format(PatchPolicy.quantize(recount.keptKWh, step: 0.001))
        switch recount.kind {
        case .reset:
            note(.info, key: "counter:\(source.name)", at: now, into: &out) {
                "source '\(source.name)' (topic \(source.topic)): the counter went back from \(from) to \(to) kWh and the next reading carried on from there: the device restarted its count; today's \(kept) kWh are kept and counting goes on"
            }
        case .jump:
            note(.warning, key: "counter:\(source.name)", at: now, into: &out) {
                "source '\(source.name)' (topic \(source.topic)): the counter jumped from \(from) to \(to) kWh, more than its max_power (\(JSONValue.format(source.maxPowerW)) W) could deliver in the time, and the next reading carried on from there: taken as a new count (a swapped meter, a reboot that read it again), not as energy; today's \(kept) kWh are kept"
            }
        }
    }

    // MARK: - Silence

    /// A message for the source, readable or not: it is not silent.
    mutating func hear(_ position: Int, topic: String, at now: Date, into out: inout [Output]) {
        guard !sources[position].heard else { return }
        sources[position].heard = true
        if sources[position].reportedSilent, let subscribedAt {
            let name = sources[position].config.name
            out.append(.diagnostic(Diagnostic(
                .info, "source '\(name)' (topic \(topic)) reports after all, \(durationText(seconds: now.timeIntervalSince(subscribedAt))) after the subscription")))
        }
    }

    /// One warning per source that sent nothing at all within its grace after the subscription.
    mutating func reportSilentSources(at now: Date, into out: inout [Output]) {
        guard let subscribedAt else { return }
        for position in sources.indices where !sources[position].heard && !sources[position].reportedSilent {
            let source = sources[position].config
            let waited = now.timeIntervalSince(subscribedAt)
            guard waited >= source.silenceGraceSeconds else { continue }
            sources[position].reportedSilent = true
            out.append(.diagnostic(Diagnostic(
                .warning,
                "source '\(source.name)' (topic \(source.topic)): no message at all in the \(durationText(seconds: waited)) since the subscription at \(zone.clockText(at: subscribedAt, today: now)); is the topic right (a typo?) and is the meter on?"
            )))
        }
    }

    /// Counts a message of a source with a `json:` field; says, now and then, how many lacked it.
    mutating func watchField(_ position: Int, missing: Bool, at now: Date, into out: inout [Output]) {
        guard let summary = sources[position].fieldWatch.count(missing: missing, at: now) else { return }
        let source = sources[position].config
        let path = source.decoder.path?.description ?? ""
        let since = zone.clockText(at: summary.since, today: now)
        if summary.missing == summary.messages {
            out.append(.diagnostic(Diagnostic(
                .warning,
                "source '\(source.name)' (topic \(source.topic)): none of the \(summary.messages) messages since \(since) held the field \(path); check `json:` against what the device publishes"
            )))
        } else {
            out.append(.diagnostic(Diagnostic(
                .info,
                "source '\(source.name)' (topic \(source.topic)): \(summary.missing) of \(summary.messages) messages since \(since) held no field \(path) and were skipped (normal on a topic that carries several kinds of messages, such as Shelly's events/rpc)"
            )))
        }
    }
}

/// How many messages of a source lack its `json:` field. A topic that carries several kinds of
/// messages (Shelly's `events/rpc`) lacks it most of the time, which is no warning per message:
/// a summary with counts a minute after the first, then at most one an hour.
struct FieldWatch: Sendable {
    static let firstSummarySeconds = 60.0
    static let summarySeconds = 3600.0

    private(set) var since: Date?
    private var messages = 0
    private var missing = 0
    private var summaries = 0

    /// Counts one message. Returns the counts of the window that just ended when a summary is due.
    mutating func count(missing lacksField: Bool, at now: Date) -> (messages: Int, missing: Int, since: Date)? {
        guard let start = since, now >= start else {
            restart(at: now)
            tally(lacksField)
            return nil
        }
        tally(lacksField)
        guard now.timeIntervalSince(start) >= (summaries == 0 ? Self.firstSummarySeconds : Self.summarySeconds) else { return nil }
        defer { restart(at: now) }
        guard missing > 0 else { return nil }
        summaries += 1
        return (messages, missing, start)
    }

    private mutating func tally(_ lacksField: Bool) {
        messages += 1
        if lacksField { missing += 1 }
    }

    private mutating func restart(at now: Date) {
        since = now
        messages = 0
        missing = 0
    }

    mutating func shift(by seconds: Double) { since?.addTimeInterval(seconds) }
}
