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
        state.merge(dayClock.snapshot) { first, _ in first }
        state["readings"] = bank.readingsSnapshot
        state.merge(board.snapshot(currency: config.tariff?.currency)) { first, _ in first }
        if let tariff = config.tariff {
            var prices: [String: JSONValue] = [:]
            for (account, timeline) in [(EnergyAccount.imported, pricing.importPrices), (.exported, pricing.exportPrices)] {
                if let timeline, let json = timeline.json(currency: tariff.currency) { prices[account.rawValue] = json }
            }
            if !prices.isEmpty { state["prices"] = .object(prices) }
            // A reload's replaced prices, while a stretch still to be priced reaches back before it.
            if let past = pricing.past, let since = pendingSince, since < past.until { state["past_prices"] = past.json(currency: tariff.currency) }
            // The day's line about unpriced energy is said once a day, restarts included.
            if !pricing.unpricedSaid.isEmpty { state["unpriced_said"] = .array(pricing.unpricedSaid.sorted().map { .string($0.rawValue) }) }
        }
        if let openSlot = dayClock.openSlot { state["slot"] = board.slotSnapshot(start: openSlot.start, currency: config.tariff?.currency) }
        return .object(state)
    }

    /// Takes back the saved open slot, once the day, the accounts and the money are restored. A
    /// slot outside the restored day is no slot of this day: the slot then opens at the next event
    /// with what the accounts hold, as after a state saved without one.
    mutating func restoreSlot(from state: JSONValue, times: ClosedRange<Double>, maxDayKWh: Double) {
        guard let day, let slot = state["slot"], let start = slot["start"]?.numberValue, times.contains(start),
            day.start.timeIntervalSince1970 <= start, start < day.end.timeIntervalSince1970
        else { return }
        let standingPerDay = config.tariff?.standingChargePerDay ?? 0
        let standing = slot["standing_charge"]?.numberValue.flatMap { (0...max(standingPerDay, 0)).contains($0) ? $0 : nil } ?? 0
        board.restoreSlotBases(from: slot, standing: standing, currency: config.tariff?.currency, maxDayKWh: maxDayKWh)
        dayClock.openSlot = OpenSlot(start: Date(timeIntervalSince1970: start))
    }

    /// What the log says of a saved entry left out.
    static func damaged(_ what: String) -> Diagnostic { Diagnostic(.warning, "state: \(what) is damaged; left out") }

    /// How far apart the start of one date can be in two zones: UTC−12 to UTC+14.
    static let zoneSpreadSeconds = 26.0 * 3600
    /// The longest local day (a DST change back): 25 hours.
    static let longestDaySeconds = 25.0 * 3600

    /// Times a state may hold: 2000 to 2200. Anything else is a damaged file, not a date.
    static let plausibleSeconds: ClosedRange<Double> = 946_684_800...7_258_118_400

    /// Restores a snapshot into a fresh engine, before any event. Readings of sources and totals
    /// of nodes the config no longer has, or whose kind changed, are left out; so is any entry with
    /// an implausible number (each named in the returned diagnostics), while the rest of the day is
    /// kept. The day it restores is closed by the first event on a later day, like any midnight.
    /// Throws only when the file is not a state at all (no version, or its day is damaged).
    @discardableResult
    public mutating func restore(_ state: JSONValue) throws(StateError) -> [Diagnostic] {
        guard let version = state["version"]?.numberValue else { throw StateError(description: "no version") }
        guard Int(exactly: version) == Self.stateVersion else {
            throw StateError(description: "unknown version \(JSONValue.format(version))")
        }
        var skipped: [Diagnostic] = []
        func skip(_ what: String) { skipped.append(Self.damaged(what)) }
        let saved = try DayClock.restoredDay(from: state, zone: zone)
        let restoredDay = saved?.day
        let savedDayStart = saved?.savedStart ?? 0
        // Nothing in a state can be later than the end of its day, in this zone or the one it was
        // saved in (a move east ends the date earlier).
        let latestSeconds = restoredDay.map { max($0.end.timeIntervalSince1970, savedDayStart + Self.longestDaySeconds) }
        let times = Self.plausibleSeconds.lowerBound...(latestSeconds ?? Self.plausibleSeconds.upperBound)
        bank.restoreReadings(state["readings"], times: times, dayStart: restoredDay?.start, skip: skip)
        // No node can see more energy in a day than all sources at their max_power for 25 hours.
        let maxDayKWh = config.sources.map(\.maxPowerW).reduce(0, +) * 25 / 1000
        if restoredDay != nil { board.restoreAccounts(from: state, maxDayKWh: maxDayKWh, times: times, into: &skipped) }
        pricing.unpricedSaid = []
        if restoredDay != nil, let tariff = config.tariff {
            board.restoreMoney(from: state, currency: tariff.currency, maxDayKWh: maxDayKWh, into: &skipped)
            skipped += pricing.restore(from: state, currency: tariff.currency, times: times, skip: skip)
        }
        day = restoredDay
        dayClock.closedThrough = restoredDay.flatMap { DayClock.restoredClosedThrough(from: state, day: $0, skip: skip) }
        board.restoreBalances(from: state, maxDayKWh: maxDayKWh)
        restoreSlot(from: state, times: times, maxDayKWh: maxDayKWh)
        return skipped
    }

    /// A reading the source could have taken (see `accept`).
    static func isPlausible(_ value: Double, for source: SourceConfig) -> Bool {
        guard value.isFinite else { return false }
        switch source.unit.quantity {
        case .power: return abs(value) <= source.maxPowerW
        case .energy: return (0...maxEnergyKWh).contains(value)
        case .level: return (0...100).contains(value)
        case .price: return abs(value) <= TariffConfig.largestPricePerKWh
        }
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
            members["counted_t"] = countedUntil.map { .number($0.timeIntervalSince1970) }
        }
        if let counter {
            members["baseline"] = counter.baseline.map(JSONValue.number)
            members["last"] = counter.last.map(JSONValue.number)
            members["counter_t"] = counter.lastAt.map { .number($0.timeIntervalSince1970) }
            members["carried"] = .number(counter.carried)
            members["suspect"] = counter.suspect.map(JSONValue.number)
            members["assumed_from"] = counter.assumedFrom.map(JSONValue.number)
        }
        return .object(members)
    }

    enum Restored {
        case restored(EnergyTotal)
        /// Saved for another kind of total (`saved`, in the config's words): the config changed.
        case otherKind(saved: String?)
        /// More energy than all sources at their `max_power` make in a day (a lowered `max_power`).
        case beyondADay(energyKWh: Double)
        case damaged
    }

    /// Reads a saved total, checking every number: a damaged entry must not become a day's energy.
    static func restored(from json: JSONValue, spec: TotalSpec, maxDayKWh: Double, times: ClosedRange<Double>) -> Restored {
        let kind = json["kind"]?.stringValue
        guard kind == spec.description else { return .otherKind(saved: kind) }
        if let energy = json["kwh"]?.numberValue, energy > maxDayKWh { return .beyondADay(energyKWh: energy) }
        let energyRange = 0...FlowEngine.maxEnergyKWh
        func number(_ key: String, in range: ClosedRange<Double>) -> Double?? {
            guard let value = json[key], value != .null else { return .some(nil) }  // absent is fine
            guard let number = value.numberValue, range.contains(number) else { return nil }  // damaged
            return .some(number)
        }
        guard let energy = number("kwh", in: 0...maxDayKWh), let energy,
            let lastT = number("last_t", in: times),
            let lastRate = number("last_rate", in: -1e9...1e9), let countedT = number("counted_t", in: times),
            let baseline = number("baseline", in: energyRange), let last = number("last", in: energyRange),
            let counterT = number("counter_t", in: times),
            let carried = number("carried", in: 0...maxDayKWh), let suspect = number("suspect", in: energyRange),
            let assumedFrom = number("assumed_from", in: energyRange),
            // A counter's last reading comes with the baseline it counts from, and is not below it.
            (last == nil) == (baseline == nil), (last ?? 0) >= (baseline ?? 0) - CounterTrack.noise(at: baseline ?? 0)
        else { return .damaged }
        var total = EnergyTotal(spec: spec)
        total.energyKWh = energy
        if let lastT, let lastRate {
            total.lastSample = RateSample(at: Date(timeIntervalSince1970: lastT), rateW: lastRate)
            total.countedUntil = countedT.map(Date.init(timeIntervalSince1970:))
        }
        if let track = total.counter {
            total.counter = CounterTrack(
                restartsFromZero: track.restartsFromZero, baseline: baseline, last: last,
                lastAt: counterT.map(Date.init(timeIntervalSince1970:)), carried: carried ?? 0, suspect: suspect,
                assumedFrom: assumedFrom)
        }
        return .restored(total)
    }
}

extension DayMoney {
    func json(currency: Currency) -> JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(currency.code), "import_cost": .number(importCost), "export_earnings": .number(exportEarnings),
            "grid_only_cost": .number(gridOnlyCost),
        ]
        if !unpricedKWh.isEmpty { members["unpriced_kwh"] = EnergyAccount.json(unpricedKWh) }
        return .object(members)
    }

    enum Restored {
        case restored(DayMoney)
        /// Counted in another currency: the tariff changed, and the amounts mean nothing in this one.
        case otherCurrency(String)
        case damaged
    }

    /// Reads saved money, checking every number: no amount beyond what the day's energy at the
    /// largest price could make.
    static func restored(from json: JSONValue, currency: Currency, maxAmount: Double, maxDayKWh: Double) -> Restored {
        guard let code = json["currency"]?.stringValue else { return .damaged }
        guard code == currency.code else { return .otherCurrency(code) }
        var money = DayMoney()
        for (key, path) in [("import_cost", \DayMoney.importCost), ("export_earnings", \.exportEarnings), ("grid_only_cost", \.gridOnlyCost)] {
            guard let amount = json[key]?.numberValue, amount.isFinite, abs(amount) <= maxAmount else { return .damaged }
            money[keyPath: path] = amount
        }
        for (word, value) in json["unpriced_kwh"]?.objectValue ?? [:] {
            guard let account = EnergyAccount(rawValue: word), let energy = value.numberValue, (0...maxDayKWh).contains(energy) else { return .damaged }
            money.unpricedKWh[account] = energy
        }
        return .restored(money)
    }
}

extension PriceTimeline {
    /// A price source's prices as `{"source": name, "currency": code, "hold": seconds, "points":
    /// [[from, heard, price], …], "slots": [[start, end, price], …]}` (slots: a schedule's); nil for
    /// a price that needs none. The currency tells a restart
    /// whether the prices still mean anything; the hold (the source's `stale_after`) tells the
    /// daemon how long the saved prices hold without the feed's latest word (see `SavePolicy`).
    func json(currency: Currency) -> JSONValue? {
        guard let source = config.base.sourceName, !points.isEmpty || !schedule.isEmpty else { return nil }
        let list = points.map { JSONValue.array([.number($0.from.timeIntervalSince1970), .number($0.heard.timeIntervalSince1970), .number($0.basePerKWh)]) }
        var members: [String: JSONValue] = ["source": .string(source), "currency": .string(currency.code), "points": .array(list)]
        if let holdSeconds { members["hold"] = .number(holdSeconds) }
        if !schedule.isEmpty { members["slots"] = schedule.json }
        return .object(members)
    }

    /// This timeline with the saved prices of the same source, when every one is plausible.
    /// `savedCurrency` is the currency they were saved in: prices of another currency are no
    /// prices in this one (SEK energy is unpriced until a SEK price comes, never at a euro price).
    func restored(from json: JSONValue?, savedCurrency: String?, currency: Currency, times: ClosedRange<Double>, skip: (String) -> Void) -> PriceTimeline {
        guard let json, let source = config.base.sourceName, json["source"]?.stringValue == source, savedCurrency == currency.code else { return self }
        var restored = self
        for item in json["points"]?.arrayValue ?? [] {
            guard let entry = item.arrayValue, entry.count == 3, let from = entry[0].numberValue, let heard = entry[1].numberValue,
                let price = entry[2].numberValue, times.contains(from), times.contains(heard), heard >= from,
                abs(price) <= TariffConfig.largestPricePerKWh, restored.points.last.map({ $0.heard.timeIntervalSince1970 <= from }) ?? true
            else {
                // The prices before the damage are good: a stretch that needs a later one is unpriced.
                skip("the prices of '\(source)' after \(restored.points.count) good ones")
                break
            }
            restored.points.append(PricePoint(from: Date(timeIntervalSince1970: from), heard: Date(timeIntervalSince1970: heard), basePerKWh: price))
        }
        restored.points = Array(restored.points.suffix(PriceTimeline.maxPoints))
        // A schedule reaches past the saved day: its slots are plausible as far as a schedule's are.
        let (schedule, damaged) = PriceSchedule.restored(from: json["slots"], times: times.lowerBound...FlowEngine.plausibleSeconds.upperBound)
        if damaged { skip("the schedule of '\(source)' after \(schedule.slots.count) good slots") }
        restored.schedule = schedule
        return restored
    }
}
