import FoundationEssentials

/// Messages in: a message's readings taken per source (decoded, checked against the source's
/// limits, counted), the totals they move, and the widgets they touch offered; what each source
/// has sent, whether its reading is fresh, and whether it fell silent.
extension FlowEngine {
    /// Takes one MQTT message received at `time`.
    ///
    /// A `retained` message is the broker's copy of an old publish, hours old perhaps: it counts as
    /// already stale for a source with `stale_after` (its first live update refreshes it), though
    /// never older than a reading already taken (the broker re-sends it on every reconnect), and
    /// nothing is integrated from it. (The daemon passes false when MQTT 5 message expiry vouches
    /// for it.) A message dated before the latest event is late: its reading may show, it counts
    /// no energy; one dated far ahead on a later day is ignored until the next events confirm it.
    ///
    /// `inBatch`: more messages are coming at once (the daemon is reading a backlog; see
    /// `endBatch()`): the widgets the reading moves are offered when the batch ends, not now.
    public mutating func receive(topic: String, payload: [UInt8], at time: Date, retained: Bool = false, inBatch: Bool = false) -> [Output] {
        var out: [Output] = []
        let verdict = dayClock.timeline.classify(time, day: day, jumpSeconds: dayClock.jumpSeconds)
        guard let now = take(time, verdict, into: &out) else { return out }
        let matched = bank.matching(topic)
        let kind: ReadingKind = verdict == .late ? .late : retained ? .retained : .live
        // Every source the message feeds reads first (one Tasmota payload can hold the power and
        // the day's energy), then the totals move, all with the same readings.
        // The matched sources' own array (the bank's, shared) unless one refuses: no array is
        // made for a message that every source it feeds takes, the common case.
        var accepted = matched
        for (index, source) in matched.enumerated() where !accept(payload, topic: topic, for: source, at: now, kind: kind, into: &out) {
            accepted.remove(at: index - (matched.count - accepted.count))
        }
        // A direction that moved signs its magnitude again: that source reads anew.
        if !bank.directs.isEmpty { accepted += redirect(accepted) }
        // Widgets are read in place, by position: a copy of one retains all of its parts.
        // A retained price is of unknown age (a dead feed's last word): only a live one prices.
        if kind == .live { takePrices(from: accepted, at: now) }
        if kind != .late {
            for source in accepted {
                for position in flowPositions where board.widgets[position].reads.contains(source) {
                    account(source, in: position, at: now, integrating: kind == .live, into: &out)
                }
            }
            forgetPassedPrices(at: now)
        }
        // A late reading shows as of the latest event: no push is stamped back in time.
        let shownAt = kind == .late ? clock ?? now : now
        // The widgets the accepted readings touch, in order: the bars after the flows, so that the
        // totals they read are up to date.
        for position in board.widgets.indices where accepted.contains(where: { board.widgets[position].reads.contains($0) }) {
            if board.widgets[position].policy.readingArrived(at: shownAt),
                !Self.waits(inBatch: inBatch, since: &board.widgets[position].batchedSince, at: shownAt)
            {
                offer(position, at: shownAt, urgent: false, into: &out)
            } else if board.widgets[position].flow != nil {
                noteBalance(of: position, at: shownAt)
            }
        }
        sendMovedAccounts(at: shownAt, into: &out)
        return out
    }

    /// Sources that have sent nothing at all since the subscription, past their grace: for the
    /// daemon's status line.
    public var silentSources: [String] {
        bank.sources.filter { $0.reportedSilent && !$0.heard }.map(\.config.name)
    }

    /// What each source has received so far.
    public var sourceStats: [String: SourceStats] {
        Dictionary(uniqueKeysWithValues: bank.sources.map { ($0.config.name, $0.stats) })
    }

    /// The latest reading of each source that has one (for `combine: sum`, the sum of its topics'
    /// as of the latest of them).
    public var readings: [String: Reading] {
        var all: [String: Reading] = [:]
        for source in bank.sources { all[source.config.name] = source.reading }
        return all
    }

    // MARK: - Freshness
    //
    // Read through the engine, property by property: a call on `bank.sources[i]` itself copies the
    // whole source state (its config's texts and arrays retained and released), per message.

    func isStale(source position: Int, at now: Date) -> Bool {
        guard let reading = bank.sources[position].reading else { return false }
        return SourceState.isStale(reading, at: now, after: bank.sources[position].config.staleAfterSeconds)
    }

    /// The source's number at `now`; nil before its first reading. A `combine: sum` source that
    /// is not stale reads the sum of its fresh topics: a silent inverter reads 0 W.
    func value(ofSource position: Int, at now: Date) -> Double? {
        guard let reading = bank.sources[position].reading else { return nil }
        guard bank.sources[position].config.combine == .sum, !isStale(source: position, at: now) else { return reading.value }
        let staleAfter = bank.sources[position].config.staleAfterSeconds
        var sum = 0.0
        for part in bank.sources[position].topics.values where !SourceState.isStale(part, at: now, after: staleAfter) { sum += part.value }
        return sum
    }

    /// True once no value has arrived for `stale_after`: the meter went silent. (A retained copy is
    /// stale at once, but its source is silent only once a live update is overdue.)
    func isSilent(source position: Int, at now: Date) -> Bool {
        guard let staleAfter = bank.sources[position].config.staleAfterSeconds, let heardAt = bank.sources[position].lastValueAt else { return false }
        return now.timeIntervalSince(heardAt) >= staleAfter
    }

    // MARK: - Readings

    /// Plausible energy counters: anything beyond is a broken device or a wrong unit.
    static let maxEnergyKWh = 1_000_000_000.0

    /// Decodes a payload into the source's reading. Returns false when it changed no reading.
    mutating func accept(
        _ payload: [UInt8], topic: String, for position: Int, at now: Date, kind: ReadingKind, into out: inout [Output]
    ) -> Bool {
        // One retain. The way of a reading reads the config's fields in place (`setup.config.…`):
        // through `source`, a local accessor (even a `_read` one), each use copied the whole
        // config (callgrind: 950 instructions a message). `source` is for the messages.
        let setup = bank.sources[position].setup
        var source: SourceConfig { setup.config }
        hear(position, topic: topic, at: now, into: &out)
        guard payload.count <= setup.config.maxPayloadBytes else {
            bank.sources[position].stats.oversized += 1
            let count = bank.sources[position].stats.oversized
            out.append(.refused(Refusal(
                source: source.name, topic: topic, at: now, reason: .oversized(bytes: payload.count, maxBytes: source.maxPayloadBytes))))
            note(.warning, key: "oversize:\(source.name)", at: now, into: &out) {
                "source '\(source.name)' (topic \(topic)): a payload of \(payload.count) bytes is beyond its max_payload (\(source.maxPayloadBytes) bytes); not read (\(count) so far)"
            }
            return false
        }
        if setup.config.schedule != nil {
            guard let (problem, reason) = takeSchedule(payload, of: position, at: now) else { return false }
            reject(position, topic: topic, problem: problem, reason: reason, at: now, into: &out)
            return false
        }
        let decoded = setup.decode(payload)
        if setup.config.decoder.path != nil { watchField(position, missing: decoded == .noField, at: now, into: &out) }
        let problem: String
        let reason: Refusal.Reason
        switch decoded {
        case .noReading:
            bank.sources[position].stats.noReading += 1
            return false
        case .noField:
            bank.sources[position].stats.withoutField += 1
            return false
        case .invalid(let why):
            problem = why.description
            reason = .undecodable(why)
        case .value(let raw):
            let value = setup.config.convert(raw)
            switch setup.config.unit.quantity {
            case .power where abs(value) > setup.config.maxPowerW:
                problem = "\(JSONValue.format(value.rounded())) W is beyond the source's max_power (\(JSONValue.format(source.maxPowerW)) W): a glitch, or a wrong unit or scale (a site that large says so with max_power)"
            case .energy where value < 0 || value > Self.maxEnergyKWh:
                problem = "\(JSONValue.format(value)) kWh is not a plausible energy counter"
            case .level where !(0...100).contains(value):
                problem = "\(JSONValue.format(value)) % is outside 0…100"
            case .price where abs(value) > TariffConfig.largestPricePerKWh:
                problem = "a price of \(JSONValue.format(value)) per kWh is beyond \(JSONValue.format(TariffConfig.largestPricePerKWh)) per kWh: a wrong unit (EUR/MWh given as EUR/kWh?)"
            case _ where (setup.isFlag || setup.direction != nil) && directionProblem(of: position, value: value) != nil:
                problem = directionProblem(of: position, value: value) ?? ""
            default:
                if setup.config.combine == .sum, bank.sources[position].topics[topic] == nil,
                    bank.sources[position].topics.count >= SourceState.maxTopics
                {
                    out.append(.refused(Refusal(source: source.name, topic: topic, at: now, reason: .tooManyTopics(max: SourceState.maxTopics))))
                    note(.warning, key: "topics:\(source.name)", at: now, into: &out) {
                        "source '\(source.name)' (topic \(source.topic)): \(topic) is left out of the sum, which reads at most \(SourceState.maxTopics) topics; narrow the topic filter"
                    }
                    return false
                }
                let taken = bank.sources[position].take(value, topic: topic, at: now, kind: kind, dayStart: day?.start)
                if taken, setup.direction != nil { takeMagnitude(of: position) }
                if taken, bank.sources[position].silentSince != nil { reportBack(position, at: now, into: &out) }
                return taken
            }
            reason = .implausible(problem)
        }
        reject(position, topic: topic, problem: problem, reason: reason, at: now, into: &out)
        return false
    }

    /// A payload of source `position` it read and could not use: refused, counted, and said (at
    /// most once a minute per source).
    mutating func reject(_ position: Int, topic: String, problem: String, reason: Refusal.Reason, at now: Date, into out: inout [Output]) {
        let name = bank.sources[position].config.name
        out.append(.refused(Refusal(source: name, topic: topic, at: now, reason: reason)))
        bank.sources[position].stats.rejected += 1
        let count = bank.sources[position].stats.rejected
        let ignored = bank.sources[position].config.schedule == nil ? "reading ignored" : "schedule ignored, the prices already known kept"
        note(.warning, key: "reject:\(name)", at: now, into: &out) {
            "source '\(name)' (topic \(topic)): \(problem); \(ignored) (\(count) so far)"
        }
    }

    /// Brings the accounts of widget `position` up to date with a new reading of `source`.
    mutating func account(_ source: Int, in position: Int, at now: Date, integrating: Bool, into out: inout [Output]) {
        for node in integrating ? board.widgets[position].flow!.integrateOn[source] : [] {
            // A copy of the node lives only to read its rate: held while its accounts move, it
            // would share them, and the first account integrated would copy them all, at every
            // reading. (Passed straight from `widgets`, the engine itself was copied for the call.)
            let setup: NodeState.Setup
            let accounts: Range<Int>
            let rate: Double?
            do {
                let state = board.widgets[position].flow!.nodes[node]
                (setup, accounts) = (state.setup, state.accounts.indices)
                rate = self.rate(of: state, inWidget: position, at: now)
            }
            guard let rate else {
                // Unknown from here (a stale term that clears the node): nothing counts across the gap.
                for account in accounts { board.widgets[position].flow!.nodes[node].accounts[account].interrupt() }
                continue
            }
            for account in accounts {
                if let span = board.widgets[position].flow!.nodes[node].accounts[account].integrate(rateW: rate, at: now, maxGapSeconds: setup.maxGapSeconds) {
                    count(span, setup.accountKinds[account], at: setup.place, inWidget: position, into: &out)
                }
            }
        }
        board.widgets[position].flow!.accountsMoved = true
        noteLevel(of: source, inWidget: position)
        guard let reading = bank.sources[source].reading else { return }
        let maxPowerW = bank.sources[source].config.maxPowerW
        for (node, account) in board.widgets[position].flow!.countersOf[source] {
            let (added, recount) = board.widgets[position].flow!.nodes[node].accounts[account].read(
                counterKWh: reading.value, at: now, maxPowerW: maxPowerW, dayStart: day?.start)
            if let recount { report(recount, of: source, at: now, into: &out) }
            if let added, let today = splitAtMidnight(added, account: account, ofNode: node, inWidget: position, into: &out) {
                let setup = board.widgets[position].flow!.nodes[node].setup
                count(today, setup.accountKinds[account], at: setup.place, inWidget: position, into: &out)
            }
        }
    }

    /// Says what a confirmed counter jump or reset did, and why.
    mutating func report(_ recount: CounterTrack.Recount, of position: Int, at now: Date, into out: inout [Output]) {
        let source = bank.sources[position].config
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
        guard !bank.sources[position].heard else { return }
        bank.sources[position].heard = true
        if bank.sources[position].reportedSilent, let subscribedAt {
            let name = bank.sources[position].config.name
            out.append(.diagnostic(Diagnostic(
                .info, "source '\(name)' (topic \(topic)) reports after all, \(durationText(seconds: now.timeIntervalSince(subscribedAt))) after the subscription")))
        }
    }

    /// One warning per source that sent nothing at all within its grace after the subscription.
    mutating func reportSilentSources(at now: Date, into out: inout [Output]) {
        guard let subscribedAt else { return }
        for position in bank.sources.indices where !bank.sources[position].heard && !bank.sources[position].reportedSilent {
            let source = bank.sources[position].config
            let waited = now.timeIntervalSince(subscribedAt)
            guard waited >= source.silenceGraceSeconds else { continue }
            bank.sources[position].reportedSilent = true
            out.append(.diagnostic(Diagnostic(
                .warning,
                "source '\(source.name)' (topic \(source.topic)): no message at all in the \(durationText(seconds: waited)) since the subscription at \(zone.clockText(at: subscribedAt, today: now)); is the topic right (a typo?) and is the meter on?"
            )))
        }
    }

    /// When source `position` goes quiet, if it has been sending values and is not quiet yet: its
    /// `stale_after` past its last value, counted from the subscription at the earliest (a restart
    /// is no silence of the meter's).
    func silenceDue(of position: Int) -> Date? {
        guard bank.sources[position].silentSince == nil, bank.sources[position].heard, let staleAfter = bank.sources[position].config.staleAfterSeconds,
            let heardAt = bank.sources[position].lastValueAt
        else { return nil }
        return max(heardAt, subscribedAt ?? heardAt).addingTimeInterval(staleAfter)
    }

    /// Every source that had been sending values and whose `stale_after` passed without one.
    mutating func reportQuietSources(at now: Date, into out: inout [Output]) {
        for position in bank.sources.indices {
            guard let due = silenceDue(of: position), now >= due, let heardAt = bank.sources[position].lastValueAt else { continue }
            bank.sources[position].silentSince = heardAt
            let source = bank.sources[position].config
            out.append(.sourceSilent(SourceSilence(source: source.name, topic: source.topic.description, lastValueAt: heardAt, at: now)))
        }
    }

    /// A quiet source sent a value again.
    mutating func reportBack(_ position: Int, at now: Date, into out: inout [Output]) {
        let since = bank.sources[position].silentSince ?? now
        bank.sources[position].silentSince = nil
        let source = bank.sources[position].config
        out.append(.sourceBack(SourceSilence(source: source.name, topic: source.topic.description, lastValueAt: since, at: now)))
    }

    /// Counts a message of a source with a `json:` field; says, now and then, how many lacked it.
    mutating func watchField(_ position: Int, missing: Bool, at now: Date, into out: inout [Output]) {
        guard let summary = bank.sources[position].fieldWatch.count(missing: missing, at: now) else { return }
        let source = bank.sources[position].config
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
