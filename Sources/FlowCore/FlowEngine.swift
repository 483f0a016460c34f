import FoundationEssentials

/// The heart of flowbridge: (message, time) in, merge patches and log lines out.
///
/// A pure state machine in the style of mqtt-nio's: it never reads a clock, a file or a socket.
/// Every input carries its time and every output is a value for the caller to act on, which is what
/// makes replay deterministic and midnight and DST testable. The caller delivers messages with
/// `receive`, and calls `tick` at `nextDeadline` (staleness, settled bursts, trailing pushes, local
/// midnight) even when no message arrives; the daemon also says when it subscribed
/// (`subscribed(at:)`) and when the wall clock stepped (`clockStepped(by:at:)`).
public struct FlowEngine: Sendable {
    public enum Output: Sendable, Equatable {
        /// Send this to the widget.
        case push(widget: String, at: Date, PatchPolicy.Push)
        /// Write this to the log.
        case diagnostic(Diagnostic)
    }

    /// Totals of a finished local day, by `widget/node`.
    public struct ClosedDay: Sendable, Equatable {
        public var date: CivilDate
        public var totalsKWh: [String: Double]
    }

    /// A source's latest reading, in flowbridge's units with the widget's sign.
    public struct Reading: Sendable, Equatable {
        public var value: Double
        public var at: Date
    }

    /// Counts of what a source received, for `check` and the log.
    public struct SourceStats: Sendable, Equatable {
        public var readings = 0
        public var noReading = 0
        public var rejected = 0
        /// Payloads beyond `max_payload`: counted, never parsed.
        public var oversized = 0
        /// JSON messages without the source's field (a topic that carries several kinds of messages).
        public var withoutField = 0
    }

    struct Term: Sendable {
        var source: Int
        var sign: Double
    }

    struct NodeState: Sendable {
        /// What a node is, fixed once the engine is built. Behind one reference: a node is copied
        /// wherever a document is made, and a copy of the config's texts and arrays retained each
        /// of them, at every message.
        final class Setup: Sendable {
            let place: NodePlace
            let config: NodeConfig
            /// Empty for the derived output.
            let terms: [Term]
            let level: Int?
            let counter: Int?
            let maxGapSeconds: Double
            let isBalance: Bool

            init(place: NodePlace, config: NodeConfig, terms: [Term], level: Int?, counter: Int?, maxGapSeconds: Double) {
                self.place = place
                self.config = config
                self.terms = terms
                self.level = level
                self.counter = counter
                self.maxGapSeconds = maxGapSeconds
                isBalance = config.rate == .balance
            }
        }

        let setup: Setup
        var total: EnergyTotal?

        init(place: NodePlace, config: NodeConfig, terms: [Term], level: Int?, counter: Int?, maxGapSeconds: Double, total: EnergyTotal?) {
            setup = Setup(place: place, config: config, terms: terms, level: level, counter: counter, maxGapSeconds: maxGapSeconds)
            self.total = total
        }

        var place: NodePlace { setup.place }
        var config: NodeConfig { setup.config }
        var terms: [Term] { setup.terms }
        var level: Int? { setup.level }
        var counter: Int? { setup.counter }
        var maxGapSeconds: Double { setup.maxGapSeconds }
        var isBalance: Bool { setup.isBalance }
        /// Inputs and the output are magnitudes; exchange and storage are signed.
        var isMagnitude: Bool { place.slot == .inputs || place.slot == .output }
    }

    struct WidgetState: Sendable {
        let config: FlowWidgetConfig
        var nodes: [NodeState]
        var policy: PatchPolicy
        /// Per source: the nodes whose total integrates when it reads.
        let integrateOn: [Int: [Int]]
        /// Every source the widget reads.
        let reads: Set<Int>
        /// The derived output's node, if the widget has one.
        let balanceNode: Int?
        /// The balance the last time it was known: what the output keeps showing with
        /// `when_stale: hold` while a stale exchange or storage makes it unknown.
        var lastKnownBalance: Double?
    }

    /// A progress widget: what it reads, and the rate behind its last push.
    struct GaugeState: Sendable {
        let config: ProgressWidgetConfig
        /// The flow widget whose nodes and totals it reads, by position.
        let flow: Int?
        /// `of: battery`: the battery's rate and level as a storage node of the bar's own, without a
        /// total: the day's energy is the flow widget's.
        let battery: NodeState?
        /// `of: battery`: the flow widget's storage node, when the bar reads the same rate: its
        /// total is the day's charge (or discharge) the rows show.
        let storage: Int?
        /// Every source whose reading can change the bar.
        let reads: Set<Int>
        var policy: PatchPolicy
        /// The rate (W) the texts of the last push show: held within the deadband like a flow's
        /// rates (and so is the window made for it).
        var shownRateW: Double?
        /// When the level the last push shows was read: a window stays until a later reading
        /// disagrees with it.
        var shownLevelAt: Date?
    }

    public let config: FlowConfig
    let zone: any LocalTimeZone
    var sources: [SourceState]
    let exactTopics: [String: [Int]]
    let wildcardTopics: [(filter: TopicFilter, source: Int)]
    var widgets: [WidgetState]
    /// The progress widgets.
    var gauges: [GaugeState]
    /// Per widget: whether the output's clamp at 0 persists (a wrong sign) or was a moment's
    /// (meters apart). Beside the widgets, not in them, so that recording one while a widget's
    /// content is being made copies nothing.
    var clampWatches: [ClampWatch]
    var limiter = DiagnosticLimiter()
    /// The local day the totals count; nil until the first event.
    public internal(set) var day: LocalDay?
    public private(set) var lastClosedDay: ClosedDay?
    /// Which event times are believed (late ones, and ones far ahead, wait for confirmation).
    var timeline = EventTimeline()
    /// When the daemon's first subscription was in place: a source's silence counts from here.
    public private(set) var subscribedAt: Date?
    /// A jump ahead onto a later local day longer than this needs confirming: the longest `max_gap`
    /// of the sources, a silence no total integrates across. A shorter one is an ordinary midnight.
    let jumpSeconds: Double

    /// The time of the latest event taken: deadlines are what comes after it.
    public var clock: Date? { timeline.latest }

    /// Builds an engine for a config the Daemon has checked: every name a node refers to exists.
    public init(config: FlowConfig, zone: any LocalTimeZone) {
        self.config = config
        self.zone = zone
        sources = config.sources.map { SourceState(config: $0) }
        jumpSeconds = config.sources.map(\.maxGapSeconds).max() ?? SourceConfig.defaultMaxGapSeconds
        var index: [String: Int] = [:]
        var exact: [String: [Int]] = [:]
        var wildcard: [(TopicFilter, Int)] = []
        for (position, source) in config.sources.enumerated() {
            index[source.name] = position
            if source.topic.isExact {
                exact[source.topic.description, default: []].append(position)
            } else {
                wildcard.append((source.topic, position))
            }
        }
        exactTopics = exact
        wildcardTopics = wildcard
        func terms(of rate: RateSpec) -> [Term] {
            guard case .sum(let list) = rate else { return [] }
            return list.map { Term(source: index[$0.source]!, sign: $0.negated ? -1 : 1) }
        }
        let widgets: [WidgetState] = config.widgets.map { widget in
            var nodes: [NodeState] = widget.nodes.map { place, node in
                let terms = terms(of: node.rate)
                let counter = node.total?.counterSource.map { index[$0]! }
                let gapSources = terms.map(\.source) + (counter.map { [$0] } ?? [])
                return NodeState(
                    place: place, config: node, terms: terms, level: node.level.map { index[$0]! }, counter: counter,
                    maxGapSeconds: gapSources.map { config.sources[$0].integrationGapSeconds }.min() ?? SourceConfig.defaultMaxGapSeconds,
                    total: node.total.map(EnergyTotal.init(spec:)))
            }
            // The derived output reads every rate the others read; its gap is the tightest of theirs.
            let rateSources = Set(nodes.flatMap { $0.terms.map(\.source) })
            var integrateOn: [Int: [Int]] = [:]
            for (position, node) in nodes.enumerated() where node.total?.direction != nil {
                for source in node.isBalance ? Array(rateSources) : node.terms.map(\.source) {
                    integrateOn[source, default: []].append(position)
                }
            }
            let balance = nodes.firstIndex(where: \.isBalance)
            if let balance {
                let old = nodes[balance]
                nodes[balance] = NodeState(
                    place: old.place, config: old.config, terms: [], level: nil, counter: old.counter,
                    maxGapSeconds: rateSources.map { config.sources[$0].integrationGapSeconds }.min() ?? old.maxGapSeconds,
                    total: old.total)
            }
            let reads = rateSources.union(nodes.compactMap(\.level)).union(nodes.compactMap(\.counter))
            return WidgetState(
                config: widget, nodes: nodes, policy: PatchPolicy(config: widget.policy), integrateOn: integrateOn,
                reads: reads, balanceNode: balance)
        }
        self.widgets = widgets
        gauges = config.progressWidgets.map { progress in
            let flowConfig = config.flowWidget(for: progress)
            let flow = flowConfig.flatMap { found in config.widgets.firstIndex { $0.name == found.name } }
            var reads = flow.map { widgets[$0].reads } ?? []
            var battery: NodeState?
            var storage: Int?
            if case .battery(let gauge) = progress.measure, let node = gauge.node(besides: flowConfig) {
                let terms = terms(of: node.rate)
                let level = node.level.map { index[$0]! }
                battery = NodeState(
                    place: .storage, config: node, terms: terms, level: level, counter: nil,
                    maxGapSeconds: SourceConfig.defaultMaxGapSeconds, total: nil)
                if let flow, let found = widgets[flow].nodes.firstIndex(where: { $0.place == .storage }),
                    widgets[flow].nodes[found].config.rate == node.rate, widgets[flow].nodes[found].total != nil
                {
                    storage = found
                }
                var read = terms.map(\.source) + (level.map { [$0] } ?? [])
                if let flow, let storage, let counter = widgets[flow].nodes[storage].counter { read.append(counter) }
                reads = Set(read)
            }
            return GaugeState(
                config: progress, flow: flow, battery: battery, storage: storage, reads: reads,
                policy: PatchPolicy(config: progress.policy))
        }
        clampWatches = Array(repeating: ClampWatch(), count: widgets.count)
    }

    // MARK: - Inputs

    /// Takes one MQTT message received at `time`.
    ///
    /// A `retained` message is the broker's copy of an old publish, hours old perhaps: it counts as
    /// already stale for a source with `stale_after` (its first live update refreshes it), though
    /// never older than a reading already taken (the broker re-sends it on every reconnect), and
    /// nothing is integrated from it. (The daemon passes false when MQTT 5 message expiry vouches
    /// for it.) A message dated before the latest event is late: its reading may show, it counts
    /// no energy; one dated far ahead on a later day is ignored until the next events confirm it.
    public mutating func receive(topic: String, payload: [UInt8], at time: Date, retained: Bool = false) -> [Output] {
        var out: [Output] = []
        let verdict = timeline.classify(time, dayEnd: day?.end, jumpSeconds: jumpSeconds)
        guard let now = take(time, verdict, into: &out) else { return out }
        var matched = exactTopics[topic] ?? []
        for (filter, source) in wildcardTopics where filter.matches(topic) { matched.append(source) }
        let kind: ReadingKind = verdict == .late ? .late : retained ? .retained : .live
        // Every source the message feeds reads first (one Tasmota payload can hold the power and
        // the day's energy), then the totals move, all with the same readings.
        let accepted = matched.filter { accept(payload, topic: topic, for: $0, at: now, kind: kind, into: &out) }
        // Widgets are read in place, by position: a copy of one retains all of its parts.
        if kind != .late {
            for source in accepted {
                for position in widgets.indices where widgets[position].reads.contains(source) {
                    account(source, in: position, at: now, integrating: kind == .live, into: &out)
                }
            }
        }
        // A late reading shows as of the latest event: no push is stamped back in time.
        let shownAt = kind == .late ? clock ?? now : now
        // The widgets the accepted readings touch, in order.
        for position in widgets.indices where accepted.contains(where: { widgets[position].reads.contains($0) }) {
            if widgets[position].policy.readingArrived(at: shownAt) {
                offer(position, at: shownAt, urgent: false, into: &out)
            } else {
                noteBalance(of: position, at: shownAt)
            }
        }
        // The bars after the flows: the totals they read are up to date.
        for position in gauges.indices where accepted.contains(where: gauges[position].reads.contains) {
            if gauges[position].policy.readingArrived(at: shownAt) { offerGauge(position, at: shownAt, urgent: false, into: &out) }
        }
        return out
    }

    /// Lets time pass: stale readings, settled bursts, held-back pushes, silent sources and local
    /// midnight take effect.
    public mutating func tick(at time: Date) -> [Output] {
        var out: [Output] = []
        let verdict = timeline.classify(time, dayEnd: day?.end, jumpSeconds: jumpSeconds)
        guard let now = take(time, verdict, into: &out), verdict != .late else { return out }
        interruptUnknownBalances(at: now)
        reportSilentSources(at: now, into: &out)
        offerAll(at: now, urgent: false, into: &out)
        return out
    }

    /// Ticks at every deadline up to and including `end`, in order: what a live clock would have
    /// done between two events. An `end` before the latest event, or far ahead on a later day, runs
    /// nothing until a later event confirms the clock moved (replay ticks through each message's
    /// time before taking the message, so one line dated tomorrow must not close today).
    public mutating func tick(through end: Date) -> [Output] {
        var out: [Output] = []
        let verdict = timeline.classify(end, dayEnd: day?.end, jumpSeconds: jumpSeconds)
        switch verdict {
        case .late, .ahead:
            _ = take(end, verdict, into: &out)
            return out
        case .stepped:
            return tick(at: end)
        case .onTime:
            break
        }
        // Before the first event (a fresh or restored engine) nothing is due yet; after a clock
        // that jumped days ahead, one tick closes the days at once instead of one by one.
        guard let clock, let day, end.timeIntervalSince(max(clock, day.end)) < 3 * 86_400 else {
            return tick(at: end)
        }
        while let deadline = nextDeadline, deadline <= end {
            out += tick(at: deadline)
        }
        timeline.take(end, .onTime)
        return out
    }

    /// The daemon's subscription is in place (its first successful connection): from `now` on, a
    /// source that sends nothing at all within its `stale_after` (60 s for `stale_after: never`)
    /// is warned about once, naming its topic: a typo, an unplugged meter. Later calls change
    /// nothing. Returns what falls due up to `now`.
    public mutating func subscribed(at now: Date) -> [Output] {
        if subscribedAt == nil { subscribedAt = now }
        return tick(through: now)
    }

    /// Sources that have sent nothing at all since the subscription, past their grace: for the
    /// daemon's status line.
    public var silentSources: [String] {
        sources.filter { $0.reportedSilent && !$0.heard }.map(\.config.name)
    }

    /// The wall clock stepped by `seconds` (ahead when positive) without that time passing: the
    /// daemon saw its wall clock move differently from its monotonic clock. Believed at once:
    /// nothing is integrated across the step; the ages of readings, the silence of sources and the
    /// policies' intervals count what really passed; the day follows the clock (a step ahead past
    /// midnight closes the day, a step back past it counts on under the earlier date).
    public mutating func clockStepped(by seconds: Double, at now: Date) -> [Output] {
        var out: [Output] = []
        for position in sources.indices { sources[position].shift(by: seconds) }
        for position in gauges.indices { gauges[position].policy.shift(by: seconds) }
        for position in widgets.indices {
            widgets[position].policy.shift(by: seconds)
            clampWatches[position].reset()
            for node in widgets[position].nodes.indices { widgets[position].nodes[node].total?.clockStepped(by: seconds) }
        }
        subscribedAt = subscribedAt?.addingTimeInterval(seconds)
        timeline.reset(to: now)
        out.append(.diagnostic(Diagnostic(
            .warning,
            "the system clock stepped \(seconds > 0 ? "ahead" : "back") by \(durationText(seconds: seconds)) (now \(zone.clockText(at: now, withSeconds: true)) \(zone.identifier)); no energy is counted across the step"
        )))
        advanceDay(to: now, into: &out)
        offerAll(at: now, urgent: false, into: &out)
        return out
    }

    /// When the engine next needs a `tick`, if nothing arrives before: a settled burst, the end of
    /// a held-back push's interval, a reading turning stale, a silent source's grace, or local
    /// midnight. Asked before every message, so it allocates nothing.
    public var nextDeadline: Date? {
        var next: Date?
        let clock = self.clock
        func consider(_ deadline: Date) {
            if clock.map({ deadline > $0 }) ?? true, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        // By index, property by property: copies of the widgets' and sources' states would retain
        // and release all of them, per message.
        for position in widgets.indices {
            if let deadline = widgets[position].policy.deadline { consider(deadline) }
        }
        for position in gauges.indices {
            if let deadline = gauges[position].policy.deadline { consider(deadline) }
        }
        if let day { consider(day.end) }
        for position in sources.indices {
            if let subscribedAt, !sources[position].heard, !sources[position].reportedSilent {
                consider(subscribedAt.addingTimeInterval(sources[position].config.silenceGraceSeconds))
            }
            guard let staleAfter = sources[position].config.staleAfterSeconds, let reading = sources[position].reading else { continue }
            consider(reading.at.addingTimeInterval(staleAfter))
            // A retained copy is stale at once but marked only once a live update is overdue.
            if let heard = sources[position].lastValueAt, heard > reading.at { consider(heard.addingTimeInterval(staleAfter)) }
            if sources[position].config.combine == .sum {
                for part in sources[position].topics.values { consider(part.at.addingTimeInterval(staleAfter)) }
            }
        }
        return next
    }

    /// The document each widget shows now (its last push), by widget name.
    public var deliveredContent: [String: JSONValue] {
        var documents: [String: JSONValue] = [:]
        for widget in widgets { documents[widget.config.name] = widget.policy.delivered?.json }
        for gauge in gauges { documents[gauge.config.name] = gauge.policy.delivered?.json }
        return documents
    }

    /// What each source has received so far.
    public var sourceStats: [String: SourceStats] {
        Dictionary(uniqueKeysWithValues: sources.map { ($0.config.name, $0.stats) })
    }

    /// The latest reading of each source that has one (for `combine: sum`, the sum of its topics'
    /// as of the latest of them).
    public var readings: [String: Reading] {
        var all: [String: Reading] = [:]
        for source in sources { all[source.config.name] = source.reading }
        return all
    }

    /// Takes over what the widgets of `old` (the engine of a config being reloaded) were sent, for
    /// widgets of the same name: the next push is a patch from what each widget shows. And what
    /// `old` knew of the connection: when it subscribed, and which sources of the same name spoke.
    public mutating func adoptDeliveries(from old: FlowEngine) {
        for position in widgets.indices {
            let name = widgets[position].config.name
            if let previous = old.policy(ofWidget: name) { widgets[position].policy.adopt(previous) }
            if let previous = old.widgets.first(where: { $0.config.name == name }) {
                widgets[position].lastKnownBalance = previous.lastKnownBalance
            }
        }
        for position in gauges.indices {
            let name = gauges[position].config.name
            if let previous = old.policy(ofWidget: name) { gauges[position].policy.adopt(previous) }
            if let previous = old.gauges.first(where: { $0.config.name == name }) {
                gauges[position].shownRateW = previous.shownRateW
                gauges[position].shownLevelAt = previous.shownLevelAt
            }
        }
        subscribedAt = old.subscribedAt
        for position in sources.indices {
            if let previous = old.sources.first(where: { $0.config.name == sources[position].config.name }) {
                sources[position].adoptSession(from: previous)
            }
        }
    }

    /// The policy of the widget of this name, flow or progress.
    func policy(ofWidget name: String) -> PatchPolicy? {
        widgets.first { $0.config.name == name }?.policy ?? gauges.first { $0.config.name == name }?.policy
    }

    // MARK: - Time

    /// Applies the timeline's verdict on an event at `time`. Returns the time to take it at, or nil
    /// when the event is ignored (far ahead, unconfirmed).
    mutating func take(_ time: Date, _ verdict: EventTimeline.Verdict, into out: inout [Output]) -> Date? {
        let latest = timeline.latest
        let now = timeline.effectiveTime(time, verdict)
        timeline.take(time, verdict)
        switch verdict {
        case .onTime:
            advanceDay(to: now, into: &out)
        case .late:
            break
        case .ahead(let first):
            if first, let latest {
                let zone = self.zone
                note(.warning, key: "clock-ahead", at: latest, into: &out) {
                    "an event dated \(zone.clockText(at: now, withSeconds: true)) is \(durationText(seconds: now.timeIntervalSince(latest))) after the latest (\(zone.clockText(at: latest, withSeconds: true))), on a later day: ignored unless the next events confirm that the clock moved on"
                }
            }
            return nil
        case .stepped(let from):
            let zone = self.zone
            note(.warning, key: "clock-step", at: now, into: &out) {
                "the clock moved \(now > from ? "ahead" : "back") from \(zone.clockText(at: from, withSeconds: true)) to \(zone.clockText(at: now, withSeconds: true)) (\(zone.identifier)), confirmed by the events since; no energy is counted across the step"
            }
            advanceDay(to: now, into: &out)
        }
        return now
    }

    // MARK: - The day

    /// Closes every local day that ended before `now`; the widgets get their reset totals at once.
    mutating func advanceDay(to now: Date, into out: inout [Output]) {
        guard var current = day else {
            day = zone.day(containing: now)
            return
        }
        if now < current.start {
            // The clock went back past midnight (NTP correcting a clock that ran ahead, or a state
            // saved under such a clock): the energy counted is this day's, under its right date.
            let corrected = zone.day(containing: now)
            let zoneName = zone.identifier
            note(.warning, key: "clock", at: now, into: &out) {
                "the clock went back to before \(current.date) (\(zoneName)); the totals count on as \(corrected.date)"
            }
            day = corrected
            return
        }
        guard now >= current.end else { return }
        var closedDays = 0
        while now >= current.end {
            var closed = ClosedDay(date: current.date, totalsKWh: [:])
            for position in widgets.indices {
                for node in widgets[position].nodes.indices {
                    let key = "\(widgets[position].config.name)/\(widgets[position].nodes[node].place)"
                    let gap = widgets[position].nodes[node].maxGapSeconds
                    if let energy = widgets[position].nodes[node].total?.closeDay(at: current.end, maxGapSeconds: gap) {
                        closed.totalsKWh[key] = energy
                    }
                }
            }
            lastClosedDay = closed
            if closedDays == 0 {
                let summary = closed.totalsKWh.keys.sorted().map { "\($0) \(JSONValue.format(PatchPolicy.quantize(closed.totalsKWh[$0]!, step: 0.001))) kWh" }
                out.append(.diagnostic(Diagnostic(.info, "day \(current.date) (\(zone.identifier)) closed: \(summary.isEmpty ? "no totals" : summary.joined(separator: ", "))")))
            }
            closedDays += 1
            // After a long downtime, jump to today instead of closing empty days one by one.
            current = closedDays > 3 ? zone.day(containing: now) : zone.day(after: current)
        }
        day = current
        offerAll(at: now, urgent: true, into: &out)
    }

    /// Offers every widget its content: the flows, then the bars that read their totals.
    mutating func offerAll(at now: Date, urgent: Bool, into out: inout [Output]) {
        for position in widgets.indices { offer(position, at: now, urgent: urgent, into: &out) }
        for position in gauges.indices { offerGauge(position, at: now, urgent: urgent, into: &out) }
    }

    mutating func note(_ level: Diagnostic.Level, key: String, at now: Date, into out: inout [Output], _ message: () -> String) {
        if let diagnostic = limiter.admit(key, at: now, { Diagnostic(level, message()) }) {
            out.append(.diagnostic(diagnostic))
        }
    }
}
