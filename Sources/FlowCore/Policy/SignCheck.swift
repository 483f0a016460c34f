/// Whether a flow widget's signs are right, judged from what its meters said over a while.
///
/// "Are my signs right?" is the first question of every new setup: devices disagree on what + means
/// (evcc's battery, Fronius and Huawei grid meters, a current clamp put on the wrong way round), and
/// a flipped sign draws a plausible-looking but wrong widget. Each check here looks for what only a
/// flipped sign can explain, and a verdict that finds one names the sources whose `invert` to flip:
///
/// - production that reads negative;
/// - a battery level that rises while the storage rate says draining (or falls while it says filling);
/// - a grid import that grows as production grows, or a battery that drains faster as the sun comes
///   out (with the sun up the home would then be drawing its import on top of the production);
/// - a measured output that only adds up with the exchange or the storage flipped;
/// - a derived output whose balance stays below 0, so the widget keeps showing 0.
///
/// Pure: the caller observes the live readings (in flowbridge's units, with the configured signs,
/// after `invert`) at times of its choosing, and asks for the verdicts at the end. Meters report a
/// moment apart, so no single observation is evidence; each verdict weighs them all.
public struct SignCheck: Sendable {
    /// What a check looks at.
    public enum Check: String, Sendable, CaseIterable {
        /// Production is never negative.
        case production
        /// The battery level moves the way the storage rate says.
        case levelFollowsRate = "level"
        /// The grid imports less, not more, as production rises.
        case exchangeAgainstProduction = "grid and production"
        /// The battery fills more, not less, as production rises.
        case storageWithProduction = "battery and production"
        /// A measured output equals Σ inputs + exchange − storage.
        case balanceAddsUp = "balance"
        /// A derived output's balance does not stay below 0.
        case outputNotClamped = "derived output"
    }

    public struct Verdict: Sendable, Equatable, CustomStringConvertible {
        public enum Outcome: String, Sendable, Equatable {
            case plausible = "ok"
            case wrong = "WRONG"
            case undecided = "not judged"
        }

        public var place: NodePlace
        public var check: Check
        public var outcome: Outcome
        /// What was seen, in words.
        public var evidence: String
        /// For a wrong sign: the fixes, any one of which would do; each names the sources whose
        /// `invert` to flip together. Empty when the evidence does not say which sign is wrong.
        public var flips: [[String]]

        public init(place: NodePlace, check: Check, outcome: Outcome, evidence: String, flips: [[String]] = []) {
            self.place = place
            self.check = check
            self.outcome = outcome
            self.evidence = evidence
            self.flips = flips
        }

        /// `flip `invert` on source 'battery'`, or alternatives joined with "or".
        public var fix: String? {
            guard outcome == .wrong else { return nil }
            guard !flips.isEmpty else { return "check the signs of the exchange and the storage" }
            let options = flips.map { names in
                let quoted = names.map { "'\($0)'" }
                return names.count == 1 ? "source \(quoted[0])" : "sources \(quoted.joined(separator: " and "))"
            }
            return "flip `invert` on " + options.joined(separator: ", or on ")
        }

        public var description: String {
            "\(check.rawValue): \(outcome.rawValue), \(evidence)" + (fix.map { "; \($0)" } ?? "")
        }
    }

    /// Below this a reading is meter noise or a standby draw, not a direction (W).
    public static let noiseW = 50.0
    /// Production must move this much before the grid's and the battery's response to it says
    /// anything (W).
    public static let minProductionSwingW = 300.0
    /// A slope of the grid (or the battery) against production beyond this, the wrong way, is a
    /// flipped sign: with the right signs a rising production lowers the import (raises the charge)
    /// about watt for watt, unless the home's draw rises faster than the sun, which it does not.
    public static let wrongSlope = 0.5
    /// The battery level must move at least this much (percentage points) to say which way it goes.
    public static let minLevelStepPercent = 1.0

    let widget: FlowWidgetConfig
    let names: [NodePlace: [(source: String, sign: Double)]]
    let levelSource: String?
    var production: [Int: ProductionTally] = [:]
    var level = LevelTally()
    var exchangeFit = LinearFit()
    var storageFit = LinearFit()
    var identity = IdentityTally()
    var clamp = ClampTally()

    public init(widget: FlowWidgetConfig) {
        self.widget = widget
        var names: [NodePlace: [(String, Double)]] = [:]
        for (place, node) in widget.nodes {
            if case .sum(let terms) = node.rate { names[place] = terms.map { ($0.source, $0.negated ? -1 : 1) } }
        }
        self.names = names
        levelSource = widget.storage?.level
    }

    /// Takes the live readings of one moment, by source name (stale and missing ones left out).
    public mutating func observe(_ values: [String: Double]) {
        func value(of place: NodePlace) -> Double? {
            guard let terms = names[place] else { return nil }
            var sum = 0.0
            for term in terms {
                guard let value = values[term.source] else { return nil }
                sum += term.sign * value
            }
            return sum
        }
        var productionW: Double?
        for (index, _) in widget.inputs.enumerated() {
            guard let rate = value(of: .input(index)) else { continue }
            let negative = names[.input(index)]!.filter { $0.sign * (values[$0.source] ?? 0) < -Self.noiseW }.map(\.source)
            production[index, default: ProductionTally()].add(rate, negativeSources: negative)
            productionW = (productionW ?? 0) + max(0, rate)
        }
        let hasExchange = widget.exchange != nil
        let hasStorage = widget.storage != nil
        let exchange = value(of: .exchange)
        let storage = value(of: .storage)
        if let storage, let source = levelSource, let levelPercent = values[source] {
            level.add(levelPercent: levelPercent, storageW: storage)
        }
        // The balance needs the exchange and the storage (a missing one is unknown, not 0); an input
        // without a live reading counts 0 W, as the engine counts it (inverters sleep at night).
        guard !hasExchange || exchange != nil, !hasStorage || storage != nil else { return }
        let inputsW = productionW ?? 0
        if productionW != nil {
            if let exchange { exchangeFit.add(x: inputsW, y: exchange) }
            if let storage { storageFit.add(x: inputsW, y: storage) }
        }
        guard let output = widget.output else { return }
        if output.rate == .balance {
            clamp.add(inputsW: inputsW, exchangeW: exchange ?? 0, storageW: storage ?? 0)
        } else if let measured = value(of: .output), hasExchange || hasStorage {
            identity.add(inputsW: inputsW, exchangeW: exchange ?? 0, storageW: storage ?? 0, outputW: max(0, measured))
        }
    }

    /// Every check that applies to the widget, with what the observations say.
    public var verdicts: [Verdict] {
        var all: [Verdict] = []
        for (index, node) in widget.inputs.enumerated() {
            all.append(productionVerdict(index, node))
        }
        if let storage = widget.storage, storage.level != nil { all.append(levelVerdict()) }
        if !widget.inputs.isEmpty {
            if widget.exchange != nil { all.append(slopeVerdict(.exchange)) }
            if widget.storage != nil { all.append(slopeVerdict(.storage)) }
        }
        if let output = widget.output, widget.exchange != nil || widget.storage != nil {
            all.append(output.rate == .balance ? clampVerdict() : identityVerdict())
        }
        return all
    }

    // MARK: - Verdicts

    func label(_ place: NodePlace) -> String {
        let node = widget.nodes.first { $0.place == place }?.node
        return node?.name ?? place.description
    }

    func sources(_ place: NodePlace) -> [String] { names[place]?.map(\.source) ?? [] }

    /// `+1200 W`, `-300 W`, `0 W`.
    func watts(_ value: Double) -> String {
        let rounded = value.rounded()
        return (rounded > 0 ? "+" : "") + JSONValue.format(rounded) + " W"
    }

    func productionVerdict(_ index: Int, _ node: NodeConfig) -> Verdict {
        let place = NodePlace.input(index)
        guard let tally = production[index], tally.count > 0 else {
            return Verdict(place: place, check: .production, outcome: .undecided, evidence: "no reading")
        }
        let lowest = watts(tally.lowestW)
        if 2 * tally.negative > tally.count {
            let culprits = tally.negativeSources.isEmpty ? sources(place) : tally.negativeSources.sorted()
            return Verdict(
                place: place, check: .production, outcome: .wrong,
                evidence: "read below 0 in \(tally.negative) of \(tally.count) readings (lowest \(lowest)); production cannot be negative",
                flips: [culprits])
        }
        return Verdict(place: place, check: .production, outcome: .plausible, evidence: "lowest \(lowest) in \(tally.count) readings")
    }

    func levelVerdict() -> Verdict {
        let place = NodePlace.storage
        guard let first = level.firstPercent, let moved = level.atLastMove else {
            let evidence = level.firstPercent.map {
                "the level stayed at \(JSONValue.format($0)) % (a battery moves 1 % in minutes: listen longer while it charges or discharges)"
            } ?? "no level and rate read together"
            return Verdict(place: place, check: .levelFollowsRate, outcome: .undecided, evidence: evidence)
        }
        let rose = moved.percent > first
        let meanW = moved.rate.meanW
        let how = "the level \(rose ? "rose" : "fell") \(JSONValue.format(first)) → \(JSONValue.format(moved.percent)) % while the rate read \(watts(meanW)) on average"
        let filling = moved.rate.mostly(positive: true)
        let draining = moved.rate.mostly(positive: false)
        if rose ? draining : filling {
            return Verdict(
                place: place, check: .levelFollowsRate, outcome: .wrong,
                evidence: "\(how), which says \(rose ? "draining" : "filling")", flips: [sources(place)])
        }
        if rose ? filling : draining {
            return Verdict(place: place, check: .levelFollowsRate, outcome: .plausible, evidence: "\(how) (\(rose ? "filling" : "draining"))")
        }
        return Verdict(place: place, check: .levelFollowsRate, outcome: .undecided, evidence: "\(how), neither clearly filling nor draining")
    }

    func slopeVerdict(_ place: NodePlace) -> Verdict {
        let exchange = place == .exchange
        let fit = exchange ? exchangeFit : storageFit
        let check: Check = exchange ? .exchangeAgainstProduction : .storageWithProduction
        guard fit.count >= 3, fit.spanX >= Self.minProductionSwingW, let slope = fit.slope else {
            let swing = fit.count > 0 ? "production moved \(JSONValue.format(fit.spanX.rounded())) W" : "production and \(label(place)) never read together"
            // What a person can check meanwhile: with the sun up and little on, the grid exports.
            let byHand = exchange ? " (or by eye: with the sun up and little on in the home, \(label(place)) must read below 0)" : ""
            return Verdict(
                place: place, check: check, outcome: .undecided,
                evidence: "\(swing); it must move \(JSONValue.format(Self.minProductionSwingW)) W (a passing cloud) to show which way \(label(place)) answers\(byHand)")
        }
        let perW = (slope > 0 ? "+" : "") + JSONValue.format((slope * 100).rounded() / 100) + " W per W"
        let span = "over \(JSONValue.format(fit.spanX.rounded())) W of production change"
        // With the right signs: more sun, less import (exchange falls), more charge (storage rises).
        let wrong = exchange ? slope > Self.wrongSlope : slope < -Self.wrongSlope
        let right = exchange ? slope < -0.2 : slope > 0.2
        if wrong {
            let what = exchange
                ? "as production rose the import rose with it (\(perW) \(span)): the home would draw its import on top of the sun"
                : "as production rose the battery drained faster (\(perW) \(span))"
            return Verdict(place: place, check: check, outcome: .wrong, evidence: what, flips: [sources(place)])
        }
        if right {
            return Verdict(place: place, check: check, outcome: .plausible, evidence: "\(label(place)) answered production the right way (\(perW) \(span))")
        }
        return Verdict(place: place, check: check, outcome: .undecided, evidence: "\(label(place)) hardly followed production (\(perW) \(span))")
    }

    func identityVerdict() -> Verdict {
        let place = NodePlace.output
        guard identity.count > 0 else {
            return Verdict(place: place, check: .balanceAddsUp, outcome: .undecided, evidence: "the output and every other slot never read together")
        }
        let residuals = identity.meanResidualsW
        let fits = max(Self.noiseW, 0.15 * identity.meanGrossW)
        let asIs = residuals[IdentityTally.asConfigured]
        let words = "the output differs from Σ inputs + exchange − storage by \(JSONValue.format(asIs.rounded())) W on average"
        if asIs <= fits {
            return Verdict(place: place, check: .balanceAddsUp, outcome: .plausible, evidence: "\(words) in \(identity.count) readings")
        }
        let best = residuals.indices.min { residuals[$0] < residuals[$1] }!
        if best != IdentityTally.asConfigured, residuals[best] <= fits, residuals[best] * 2 <= asIs {
            let (flipExchange, flipStorage) = IdentityTally.flips(best)
            var names: [String] = []
            if flipExchange { names += sources(.exchange) }
            if flipStorage { names += sources(.storage) }
            let flipped = [flipExchange ? label(.exchange) : nil, flipStorage ? label(.storage) : nil].compactMap { $0 }
            return Verdict(
                place: place, check: .balanceAddsUp, outcome: .wrong,
                evidence: "\(words); with \(flipped.joined(separator: " and ")) flipped it would be \(JSONValue.format(residuals[best].rounded())) W",
                flips: [names])
        }
        return Verdict(
            place: place, check: .balanceAddsUp, outcome: .undecided,
            evidence: "\(words), and no flipped sign explains it (the output may leave out a load, such as evcc's homePower leaves out the charge points)")
    }

    func clampVerdict() -> Verdict {
        let place = NodePlace.output
        guard clamp.count > 0 else {
            return Verdict(place: place, check: .outputNotClamped, outcome: .undecided, evidence: "the slots it derives from never read together")
        }
        let balance = "the balance (Σ inputs + exchange − storage)"
        // Two readings in three: a meter that publishes every 30 s (evcc) can leave the balance
        // below 0 for half a minute after a cloud, with every sign right.
        guard 3 * clamp.clamped > 2 * clamp.count, clamp.clamped >= 3, let last = clamp.lastClamped else {
            return Verdict(
                place: place, check: .outputNotClamped, outcome: .plausible,
                evidence: "\(balance) was below 0 in \(clamp.clamped) of \(clamp.count) readings (meters a moment apart)")
        }
        var flips: [[String]] = []
        if 2 * clamp.exchangeSuspect > clamp.clamped { flips.append(sources(.exchange)) }
        if 2 * clamp.storageSuspect > clamp.clamped { flips.append(sources(.storage)) }
        func plain(_ value: Double) -> String { JSONValue.format(value.rounded()) + " W" }
        let parts = "last \(plain(last.inputsW)) + (\(plain(last.exchangeW))) − (\(plain(last.storageW))) = \(plain(last.inputsW + last.exchangeW - last.storageW))"
        return Verdict(
            place: place, check: .outputNotClamped, outcome: .wrong,
            evidence: "\(balance) was below 0 in \(clamp.clamped) of \(clamp.count) readings (\(parts)), so the output shows 0",
            flips: flips.filter { !$0.isEmpty })
    }
}

// MARK: - Tallies

extension SignCheck {
    struct ProductionTally: Sendable {
        var count = 0
        var negative = 0
        var lowestW = Double.infinity
        var negativeSources: Set<String> = []

        mutating func add(_ rateW: Double, negativeSources names: [String]) {
            count += 1
            lowestW = min(lowestW, rateW)
            if rateW < -SignCheck.noiseW {
                negative += 1
                negativeSources.formUnion(names)
            }
        }
    }

    /// The storage rate while the level moves: where it stood at the first level reading, and the
    /// rates seen until its latest move.
    struct LevelTally: Sendable {
        struct Rates: Sendable {
            var count = 0
            var sumW = 0.0
            var filling = 0
            var draining = 0

            var meanW: Double { count == 0 ? 0 : sumW / Double(count) }

            /// Most readings on one side, beyond noise, and the mean with them.
            func mostly(positive: Bool) -> Bool {
                let side = positive ? filling : draining
                return 10 * side >= 7 * count && (positive ? meanW > SignCheck.noiseW : meanW < -SignCheck.noiseW)
            }
        }

        var firstPercent: Double?
        var rates = Rates()
        /// The level and the rates up to its latest move of at least `minLevelStepPercent`.
        var atLastMove: (percent: Double, rate: Rates)?

        mutating func add(levelPercent: Double, storageW: Double) {
            guard let first = firstPercent else {
                firstPercent = levelPercent
                return
            }
            rates.count += 1
            rates.sumW += storageW
            if storageW > SignCheck.noiseW { rates.filling += 1 }
            if storageW < -SignCheck.noiseW { rates.draining += 1 }
            if abs(levelPercent - first) >= SignCheck.minLevelStepPercent, levelPercent != atLastMove?.percent {
                atLastMove = (levelPercent, rates)
            }
        }
    }

    /// Least squares of y against x, from running sums.
    struct LinearFit: Sendable {
        var count = 0
        var sumX = 0.0, sumY = 0.0, sumXX = 0.0, sumXY = 0.0
        var lowestX = Double.infinity, highestX = -Double.infinity

        mutating func add(x: Double, y: Double) {
            count += 1
            sumX += x
            sumY += y
            sumXX += x * x
            sumXY += x * y
            lowestX = min(lowestX, x)
            highestX = max(highestX, x)
        }

        var spanX: Double { count == 0 ? 0 : highestX - lowestX }

        var slope: Double? {
            let n = Double(count)
            let spread = n * sumXX - sumX * sumX
            guard count >= 2, spread > 0 else { return nil }
            return (n * sumXY - sumX * sumY) / spread
        }
    }

    /// How far a measured output is from Σ inputs + exchange − storage, as configured and with the
    /// exchange, the storage or both flipped.
    struct IdentityTally: Sendable {
        /// Index of the residual with the signs as configured.
        static let asConfigured = 0
        var count = 0
        var residualSumsW = [0.0, 0.0, 0.0, 0.0]
        var grossSumW = 0.0

        /// Which parts residual `index` flips: bit 0 the exchange, bit 1 the storage.
        static func flips(_ index: Int) -> (exchange: Bool, storage: Bool) { (index & 1 != 0, index & 2 != 0) }

        mutating func add(inputsW: Double, exchangeW: Double, storageW: Double, outputW: Double) {
            count += 1
            for index in residualSumsW.indices {
                let (flipExchange, flipStorage) = Self.flips(index)
                let balance = inputsW + (flipExchange ? -exchangeW : exchangeW) - (flipStorage ? -storageW : storageW)
                residualSumsW[index] += abs(balance - outputW)
            }
            grossSumW += inputsW + abs(exchangeW) + abs(storageW) + outputW
        }

        var meanResidualsW: [Double] { residualSumsW.map { $0 / Double(max(1, count)) } }
        var meanGrossW: Double { grossSumW / Double(max(1, count)) }
    }

    /// How often the derived output's balance is below 0, and which flipped sign would lift it.
    struct ClampTally: Sendable {
        var count = 0
        var clamped = 0
        var exchangeSuspect = 0
        var storageSuspect = 0
        var lastClamped: (inputsW: Double, exchangeW: Double, storageW: Double)?

        mutating func add(inputsW: Double, exchangeW: Double, storageW: Double) {
            count += 1
            let raw = inputsW + exchangeW - storageW
            let gross = inputsW + abs(exchangeW) + abs(storageW)
            // Below 0 by more than noise and a few percent: a moment's disagreement between meters is not.
            guard -raw > max(SignCheck.noiseW, 0.05 * gross) else { return }
            clamped += 1
            lastClamped = (inputsW, exchangeW, storageW)
            if exchangeW != 0, inputsW - exchangeW - storageW >= 0 { exchangeSuspect += 1 }
            if storageW != 0, inputsW + exchangeW + storageW >= 0 { storageSuspect += 1 }
        }
    }
}
