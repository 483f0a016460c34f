import FoundationEssentials

/// The heart of flowbridge: (message, time) in, merge patches and log lines out.
///
/// A pure state machine in the style of mqtt-nio's: it never reads a clock, a file or a socket.
/// Every input carries its time and every output is a value for the caller to act on, which is what
/// makes replay deterministic and midnight and DST testable. The caller delivers messages with
/// `receive`, and calls `tick` at `nextDeadline` (staleness, trailing pushes, local midnight) even
/// when no message arrives.
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
    }

    struct SourceState: Sendable {
        let config: SourceConfig
        var reading: Reading?
        var stats = SourceStats()

        func isStale(at now: Date) -> Bool {
            guard let staleAfter = config.staleAfterSeconds, let reading else { return false }
            return now.timeIntervalSince(reading.at) >= staleAfter
        }
    }

    struct Term: Sendable {
        var source: Int
        var sign: Double
    }

    struct NodeState: Sendable {
        let place: NodePlace
        let config: NodeConfig
        /// Empty for the derived output.
        let terms: [Term]
        let level: Int?
        let counter: Int?
        let maxGapSeconds: Double
        var total: EnergyTotal?

        var isBalance: Bool { config.rate == .balance }
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
    }

    public let config: FlowConfig
    let zone: any LocalTimeZone
    var sources: [SourceState]
    let exactTopics: [String: [Int]]
    let wildcardTopics: [(filter: TopicFilter, source: Int)]
    var widgets: [WidgetState]
    var limiter = DiagnosticLimiter()
    /// The local day the totals count; nil until the first event.
    public internal(set) var day: LocalDay?
    public private(set) var lastClosedDay: ClosedDay?
    /// The time of the latest event: deadlines are what comes after it.
    public private(set) var clock: Date?

    /// Builds an engine for a config the Daemon has checked: every name a node refers to exists.
    public init(config: FlowConfig, zone: any LocalTimeZone) {
        self.config = config
        self.zone = zone
        sources = config.sources.map { SourceState(config: $0) }
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
        widgets = config.widgets.map { widget in
            var nodes: [NodeState] = widget.nodes.map { place, node in
                let terms: [Term] = if case .sum(let list) = node.rate {
                    list.map { Term(source: index[$0.source]!, sign: $0.negated ? -1 : 1) }
                } else { [] }
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
            if let balance = nodes.firstIndex(where: \.isBalance) {
                let old = nodes[balance]
                nodes[balance] = NodeState(
                    place: old.place, config: old.config, terms: [], level: nil, counter: old.counter,
                    maxGapSeconds: rateSources.map { config.sources[$0].integrationGapSeconds }.min() ?? old.maxGapSeconds,
                    total: old.total)
            }
            let reads = rateSources.union(nodes.compactMap(\.level)).union(nodes.compactMap(\.counter))
            return WidgetState(
                config: widget, nodes: nodes, policy: PatchPolicy(config: widget.policy), integrateOn: integrateOn,
                reads: reads)
        }
    }

    // MARK: - Inputs

    /// Takes one MQTT message received at `now`.
    ///
    /// A `retained` message is the broker's copy of an old publish, hours old perhaps: it counts as
    /// already stale for a source with `stale_after` (its first live update refreshes it), though
    /// never older than a reading already taken (the broker re-sends it on every reconnect), and
    /// nothing is integrated from it. (The daemon passes false when MQTT 5 message expiry vouches
    /// for it.)
    public mutating func receive(topic: String, payload: [UInt8], at now: Date, retained: Bool = false) -> [Output] {
        var out: [Output] = []
        clock = now
        advanceDay(to: now, into: &out)
        var matched = exactTopics[topic] ?? []
        for (filter, source) in wildcardTopics where filter.matches(topic) { matched.append(source) }
        // Every source the message feeds reads first (one Tasmota payload can hold the power and
        // the day's energy), then the totals move, all with the same readings.
        let accepted = matched.filter { accept(payload, for: $0, at: now, retained: retained, into: &out) }
        var touched: Set<Int> = []
        for source in accepted {
            for (position, widget) in widgets.enumerated() where widget.reads.contains(source) {
                account(source, in: position, at: now, integrating: !retained)
                touched.insert(position)
            }
        }
        for position in touched.sorted() { offer(position, at: now, urgent: false, into: &out) }
        return out
    }

    /// Lets time pass: stale readings, held-back pushes and local midnight take effect.
    public mutating func tick(at now: Date) -> [Output] {
        var out: [Output] = []
        clock = now
        advanceDay(to: now, into: &out)
        for position in widgets.indices { offer(position, at: now, urgent: false, into: &out) }
        return out
    }

    /// Ticks at every deadline up to and including `end`, in order: what a live clock would have
    /// done between two events.
    public mutating func tick(through end: Date) -> [Output] {
        // Before the first event (a fresh or restored engine) nothing is due yet; after a clock
        // that jumped days ahead, one tick closes the days at once instead of one by one.
        guard let clock, let day, end.timeIntervalSince(max(clock, day.end)) < 3 * 86_400 else {
            return tick(at: end)
        }
        var outputs: [Output] = []
        while let deadline = nextDeadline, deadline <= end {
            outputs += tick(at: deadline)
        }
        return outputs
    }

    /// When the engine next needs a `tick`, if nothing arrives before: the end of a held-back
    /// push's interval, a reading turning stale, or local midnight.
    /// Asked before every message, so it allocates nothing.
    public var nextDeadline: Date? {
        var next: Date?
        func consider(_ deadline: Date) {
            if clock.map({ deadline > $0 }) ?? true, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        for widget in widgets {
            if let deadline = widget.policy.deadline { consider(deadline) }
        }
        if let day { consider(day.end) }
        for source in sources {
            if let staleAfter = source.config.staleAfterSeconds, let reading = source.reading {
                consider(reading.at.addingTimeInterval(staleAfter))
            }
        }
        return next
    }

    /// The document each widget shows now (its last push), by widget name.
    public var deliveredContent: [String: JSONValue] {
        var documents: [String: JSONValue] = [:]
        for widget in widgets { documents[widget.config.name] = widget.policy.delivered?.json }
        return documents
    }

    /// What each source has received so far.
    public var sourceStats: [String: SourceStats] {
        Dictionary(uniqueKeysWithValues: sources.map { ($0.config.name, $0.stats) })
    }

    /// The latest reading of each source that has one.
    public var readings: [String: Reading] {
        var all: [String: Reading] = [:]
        for source in sources { all[source.config.name] = source.reading }
        return all
    }

    /// Takes over what the widgets of `old` (the engine of a config being reloaded) were sent, for
    /// widgets of the same name: the next push is a patch from what each widget shows.
    public mutating func adoptDeliveries(from old: FlowEngine) {
        for position in widgets.indices {
            if let previous = old.widgets.first(where: { $0.config.name == widgets[position].config.name }) {
                widgets[position].policy.adopt(previous.policy)
            }
        }
    }

    // MARK: - Readings

    /// Plausible energy counters: anything beyond is a broken device or a wrong unit.
    static let maxEnergyKWh = 1_000_000_000.0

    /// Decodes a payload into the source's reading. Returns false when it held no usable number.
    mutating func accept(_ payload: [UInt8], for position: Int, at now: Date, retained: Bool, into out: inout [Output]) -> Bool {
        let source = sources[position].config
        let problem: String
        switch source.decoder.decode(payload) {
        case .noReading:
            sources[position].stats.noReading += 1
            return false
        case .invalid(let why):
            problem = why
        case .value(let raw):
            let value = source.convert(raw)
            switch source.unit.quantity {
            case .power where abs(value) > source.maxPowerW:
                problem = "\(JSONValue.format(value.rounded())) W is beyond the source's max_power (\(JSONValue.format(source.maxPowerW)) W)"
            case .energy where value < 0 || value > Self.maxEnergyKWh:
                problem = "\(JSONValue.format(value)) kWh is not a plausible energy counter"
            case .level where !(0...100).contains(value):
                problem = "\(JSONValue.format(value)) % is outside 0…100"
            default:
                var at = now
                if retained {
                    // The broker re-sends its retained copy on every reconnect: a fresh reading
                    // is newer than it. Otherwise the copy may be hours old: stale at once.
                    if sources[position].reading != nil, !sources[position].isStale(at: now) { return false }
                    at = now.addingTimeInterval(-(source.staleAfterSeconds ?? 0))
                }
                sources[position].reading = Reading(value: value, at: at)
                sources[position].stats.readings += 1
                return true
            }
        }
        sources[position].stats.rejected += 1
        let count = sources[position].stats.rejected
        note(.warning, key: "reject:\(source.name)", at: now, into: &out) {
            "source '\(source.name)' (topic \(source.topic)): \(problem); reading ignored (\(count) so far)"
        }
        return false
    }

    /// Brings the totals of widget `position` up to date with a new reading of `source`.
    mutating func account(_ source: Int, in position: Int, at now: Date, integrating: Bool) {
        for node in integrating ? widgets[position].integrateOn[source] ?? [] : [] {
            let state = widgets[position].nodes[node]
            guard let rate = rate(of: state, in: widgets[position], at: now) else { continue }
            widgets[position].nodes[node].total?.integrate(rateW: rate, at: now, maxGapSeconds: state.maxGapSeconds)
        }
        guard let reading = sources[source].reading else { return }
        for node in widgets[position].nodes.indices where widgets[position].nodes[node].counter == source {
            widgets[position].nodes[node].total?.read(counterKWh: reading.value, at: now, maxPowerW: sources[source].config.maxPowerW)
        }
    }

    // MARK: - Rates

    /// The sum of a node's terms; nil while one of them has never read. Stale terms follow the
    /// node's `when_stale`, or count as 0 when `freshOnly` (the balance).
    func sum(of node: NodeState, at now: Date, freshOnly: Bool) -> Double? {
        var sum = 0.0
        for term in node.terms {
            guard let reading = sources[term.source].reading else { return nil }
            if sources[term.source].isStale(at: now) {
                if freshOnly { continue }
                switch node.config.whenStale {
                case .hold: break
                case .zero: continue
                case .clear: return nil
                }
            }
            sum += term.sign * reading.value
        }
        return sum
    }

    /// The rate a node shows (before quantizing), or nil when it is not drawn.
    func rate(of node: NodeState, in widget: WidgetState, at now: Date) -> Double? {
        value(of: node, in: widget, at: now).map { node.isMagnitude ? max(0, $0.raw) : $0.raw }
    }

    /// A node's signed value before the slot's clamp (the sum of its terms, or the raw balance
    /// with its parts), or nil when it is not drawn: what both the rate and the sign checks read.
    func value(of node: NodeState, in widget: WidgetState, at now: Date) -> (raw: Double, parts: BalanceParts?)? {
        if node.isBalance { return balance(of: widget, at: now).map { ($0.raw, $0) } }
        return sum(of: node, at: now, freshOnly: false).map { ($0, nil) }
    }

    typealias BalanceParts = (raw: Double, inputs: Double, exchange: Double, storage: Double)

    /// Σ inputs + exchange − storage from fresh readings, with its parts; nil until every measured
    /// node has read once.
    func balance(of widget: WidgetState, at now: Date) -> BalanceParts? {
        var parts: BalanceParts = (0, 0, 0, 0)
        for node in widget.nodes where !node.isBalance {
            guard let sum = sum(of: node, at: now, freshOnly: true) else { return nil }
            switch node.place.slot {
            case .inputs: parts.inputs += max(0, sum)
            case .exchange: parts.exchange = sum
            case .storage: parts.storage = sum
            case .output: break
            }
        }
        parts.raw = parts.inputs + parts.exchange - parts.storage
        return parts
    }

    // MARK: - Documents

    /// The widget's content now, quantized per its policy.
    mutating func content(of position: Int, at now: Date, into out: inout [Output]) -> FlowContent {
        let widget = widgets[position]
        let policy = widget.config.policy
        var content = FlowContent(shared: widget.config.shared, unit: widget.config.unit)
        for node in widget.nodes {
            guard let value = value(of: node, in: widget, at: now) else { continue }
            checkSigns(of: node, value: value, in: widget, at: now, into: &out)
            let rate = node.isMagnitude ? max(0, value.raw) : value.raw
            var total: Double?
            if let energy = node.total, energy.counter?.last != nil || energy.direction != nil {
                total = PatchPolicy.quantize(energy.energyKWh, step: policy.totalStep)
            }
            var level: Double?
            if let source = node.level, let reading = sources[source].reading {
                level = min(100, max(0, PatchPolicy.quantize(reading.value, step: policy.levelStep)))
            }
            let shown = FlowNode(
                name: node.config.name, rate: PatchPolicy.quantize(rate, step: policy.rateStep), total: total,
                level: level, icon: node.config.icon, color: node.config.color)
            switch node.place {
            case .input: content.inputs = (content.inputs ?? []) + [shown]
            case .output: content.output = shown
            case .storage: content.storage = shown
            case .exchange: content.exchange = shown
            }
        }
        return content
    }

    /// Says so when a sign is probably wrong: an input that reads clearly negative, or a balance
    /// that only a flipped exchange or storage could make positive.
    mutating func checkSigns(
        of node: NodeState, value: (raw: Double, parts: BalanceParts?), in widget: WidgetState, at now: Date,
        into out: inout [Output]
    ) {
        let name = widget.config.name
        if let parts = value.parts {
            let gross = parts.inputs + abs(parts.exchange) + abs(parts.storage)
            guard -parts.raw > max(50, 0.05 * gross) else { return }
            var suspects: [String] = []
            if parts.exchange != 0, parts.inputs - parts.exchange - parts.storage >= 0 { suspects.append(describe(.exchange, in: widget)) }
            if parts.storage != 0, parts.inputs + parts.exchange + parts.storage >= 0 { suspects.append(describe(.storage, in: widget)) }
            let hint = suspects.isEmpty
                ? "check the signs of the exchange and the storage"
                : "a sign is probably wrong: \(suspects.joined(separator: ", or "))"
            note(.warning, key: "balance:\(name)", at: now, into: &out) {
                "widget '\(name)': inputs \(JSONValue.format(parts.inputs.rounded())) W + exchange \(JSONValue.format(parts.exchange.rounded())) W − storage \(JSONValue.format(parts.storage.rounded())) W = \(JSONValue.format(parts.raw.rounded())) W; the output shows 0. \(hint)"
            }
        } else if node.place.slot == .inputs, value.raw < -50 {
            let sum = value.raw
            let names = sourceNames(node)
            note(.warning, key: "negative:\(name):\(node.place)", at: now, into: &out) {
                "widget '\(name)': input \(node.config.name ?? node.place.description) reads \(JSONValue.format(sum.rounded())) W; production cannot be negative, it shows 0: check `invert` on \(names)"
            }
        }
    }

    func describe(_ slot: FlowSlot, in widget: WidgetState) -> String {
        guard let node = widget.nodes.first(where: { $0.place.slot == slot }) else { return slot.rawValue }
        let meaning = slot == .exchange ? "+ must mean importing" : "+ must mean filling"
        return "the \(slot.rawValue) (\(sourceNames(node)); \(meaning)): toggle `invert` on it"
    }

    func sourceNames(_ node: NodeState) -> String {
        node.terms.map { "source '\(sources[$0.source].config.name)'" }.joined(separator: ", ")
    }

    mutating func offer(_ position: Int, at now: Date, urgent: Bool, into out: inout [Output]) {
        let candidate = content(of: position, at: now, into: &out)
        let name = widgets[position].config.name
        if candidate.inputs == nil, candidate.output == nil, candidate.storage == nil, candidate.exchange == nil {
            // Nothing to show: quiet before the first reading; later (every slot cleared as stale)
            // the widget cannot be sent an empty flow, so it keeps its last document, and the log says so.
            if widgets[position].policy.delivered != nil {
                note(.warning, key: "cleared:\(name)", at: now, into: &out) {
                    "widget '\(name)': every slot is stale and cleared; the widget keeps showing its last document"
                }
            }
            return
        }
        let violations = WidgetContent.flow(candidate).validate(now: now)
        guard violations.isEmpty else {
            note(.error, key: "invalid:\(name)", at: now, into: &out) {
                "widget '\(name)': not sent, the widget would reject it: \(violations.map(\.description).joined(separator: "; "))"
            }
            return
        }
        if let push = widgets[position].policy.offer(candidate, at: now, urgent: urgent) {
            out.append(.push(widget: name, at: now, push))
        }
    }

    mutating func note(_ level: Diagnostic.Level, key: String, at now: Date, into out: inout [Output], _ message: () -> String) {
        if let diagnostic = limiter.admit(key, at: now, { Diagnostic(level, message()) }) {
            out.append(.diagnostic(diagnostic))
        }
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
        for position in widgets.indices { offer(position, at: now, urgent: true, into: &out) }
    }
}
