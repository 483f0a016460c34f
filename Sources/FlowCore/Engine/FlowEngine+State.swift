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
        // `totals` keeps what the widgets show, as before accounts (an older release reads it
        // back); `accounts` has every direction of every node.
        var totals: [String: JSONValue] = [:]
        var accounts: [String: JSONValue] = [:]
        // A derived home's day is marked `balance`: it is the balance of the others, which a
        // restart rebuilds as it rebuilds theirs, so it needs no save of its own (`SavePolicy`).
        func saved(_ total: EnergyTotal, of node: NodeState) -> JSONValue {
            guard node.isBalance, case .object(var members) = total.json else { return total.json }
            members["balance"] = true
            return .object(members)
        }
        for widget in widgets {
            for node in widget.nodes {
                if let total = node.total { totals["\(widget.config.name)/\(node.place)"] = saved(total, of: node) }
                for (kind, total) in zip(node.setup.accountKinds, node.accounts) {
                    accounts["\(widget.config.name)/\(node.place)/\(kind)"] = saved(total, of: node)
                }
            }
        }
        state["totals"] = .object(totals)
        state["accounts"] = .object(accounts)
        if let tariff = config.tariff {
            var money: [String: JSONValue] = [:]
            for widget in widgets { if let day = widget.money { money[widget.config.name] = day.json(currency: tariff.currency) } }
            state["money"] = .object(money)
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
        if let slot = slotSnapshot() { state["slot"] = slot }
        var levels: [String: JSONValue] = [:]
        for widget in widgets {
            if let range = widget.levelRange { levels[widget.config.name] = [.number(range.lowerBound), .number(range.upperBound)] }
        }
        if !levels.isEmpty { state["level_range"] = .object(levels) }
        // The derived output's balance below its clamp at 0 (more counted out than in so far).
        var balances: [String: JSONValue] = [:]
        for widget in widgets where widget.balanceNode != nil && widget.balanceKWh < 0 { balances[widget.config.name] = .number(widget.balanceKWh) }
        if !balances.isEmpty { state["balance_kwh"] = .object(balances) }
        return .object(state)
    }

    /// The open slot: its start, the standing charge accrued then, and what each widget's accounts
    /// and money held then (keyed like `accounts`), so a restart neither loses the slot's energy so
    /// far nor counts it twice.
    func slotSnapshot() -> JSONValue? {
        guard let openSlot = dayClock.openSlot else { return nil }
        var bases: [String: JSONValue] = [:]
        for widget in widgets {
            var accounts: [String: JSONValue] = [:]
            var index = 0
            for node in widget.nodes {
                for kind in node.setup.accountKinds {
                    if index < widget.slotBase.accountsKWh.count {
                        accounts["\(node.place)/\(kind)"] = .number(widget.slotBase.accountsKWh[index])
                    }
                    index += 1
                }
            }
            var base: [String: JSONValue] = ["accounts": .object(accounts)]
            if let money = widget.slotBase.money, let tariff = config.tariff { base["money"] = money.json(currency: tariff.currency) }
            bases[widget.config.name] = .object(base)
        }
        return .object([
            "start": .number(openSlot.start.timeIntervalSince1970), "standing_charge": .number(widgets.first?.slotBase.standingCharge ?? 0),
            "widgets": .object(bases),
        ])
    }

    /// Takes back the derived home's balance, the saved open slot and the day's battery ranges, once
    /// the day, the accounts and the money are restored. A slot outside the restored day, or a base above what its account
    /// holds now, is no slot of this day: the slot then opens at the next event with what the
    /// accounts hold, as after a state saved without one.
    mutating func restoreSlot(from state: JSONValue, times: ClosedRange<Double>, maxDayKWh: Double) {
        for position in widgets.indices {
            guard let node = widgets[position].balanceNode else { continue }
            // The derived output's day goes on from what it showed, or from the balance below 0
            // that it showed as 0.
            let shown = widgets[position].nodes[node].accounts.first?.energyKWh ?? 0
            let saved = state["balance_kwh"]?[widgets[position].config.name]?.numberValue
            widgets[position].balanceKWh = shown == 0 ? min(0, max(saved ?? 0, -maxDayKWh)) : shown
        }
        for position in widgets.indices {
            guard let saved = state["level_range"]?[widgets[position].config.name]?.arrayValue, saved.count == 2,
                let low = saved[0].numberValue, let high = saved[1].numberValue, 0 <= low, low <= high, high <= 100
            else { continue }
            widgets[position].levelRange = low...high
        }
        guard let day, let slot = state["slot"], let start = slot["start"]?.numberValue, times.contains(start),
            day.start.timeIntervalSince1970 <= start, start < day.end.timeIntervalSince1970
        else { return }
        let standingPerDay = config.tariff?.standingChargePerDay ?? 0
        let standing = slot["standing_charge"]?.numberValue.flatMap { (0...max(standingPerDay, 0)).contains($0) ? $0 : nil } ?? 0
        let maxAmount = maxDayKWh * TariffConfig.largestPricePerKWh
        for position in widgets.indices {
            let saved = slot["widgets"]?[widgets[position].config.name]
            var base = SlotBase(accountsKWh: [], money: widgets[position].money, standingCharge: standing)
            for node in widgets[position].nodes {
                for (kind, total) in zip(node.setup.accountKinds, node.accounts) {
                    let value = saved?["accounts"]?["\(node.place)/\(kind)"]?.numberValue
                    base.accountsKWh.append(value.flatMap { 0 <= $0 && $0 <= total.energyKWh ? $0 : nil } ?? total.energyKWh)
                }
            }
            if let tariff = config.tariff, let money = saved?["money"],
                case .restored(let restored) = DayMoney.restored(from: money, currency: tariff.currency, maxAmount: maxAmount, maxDayKWh: maxDayKWh)
            {
                base.money = restored
            }
            widgets[position].slotBase = base
        }
        dayClock.openSlot = OpenSlot(start: Date(timeIntervalSince1970: start))
    }

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
        func skip(_ what: String) { skipped.append(Diagnostic(.warning, "state: \(what) is damaged; left out")) }
        let saved = try DayClock.restoredDay(from: state, zone: zone)
        let restoredDay = saved?.day
        let savedDayStart = saved?.savedStart ?? 0
        // Nothing in a state can be later than the end of its day, in this zone or the one it was
        // saved in (a move east ends the date earlier).
        let latestSeconds = restoredDay.map { max($0.end.timeIntervalSince1970, savedDayStart + Self.longestDaySeconds) }
        let times = Self.plausibleSeconds.lowerBound...(latestSeconds ?? Self.plausibleSeconds.upperBound)
        var restoredBank = bank
        restoredBank.restoreReadings(state["readings"], times: times, skip: skip)
        var restoredWidgets = widgets
        let savedTotals = state["totals"]?.objectValue ?? [:]
        // A state written before accounts has only `totals`: each restores into the account it
        // counted (by its kind); the node's other directions start from the restart.
        let savedAccounts = state["accounts"]?.objectValue
        // No node can see more energy in a day than all sources at their max_power for 25 hours.
        let maxDayKWh = config.sources.map(\.maxPowerW).reduce(0, +) * 25 / 1000
        for position in restoredWidgets.indices where restoredDay != nil {
            for node in restoredWidgets[position].nodes.indices {
                let state = restoredWidgets[position].nodes[node]
                let nodeKey = "\(restoredWidgets[position].config.name)/\(state.place)"
                for (index, kind) in state.setup.accountKinds.enumerated() {
                    let spec = state.accounts[index].spec
                    // The shown account is named as the node's total was before there were accounts.
                    let what = index == state.setup.shown ? "the total of \(nodeKey)" : "the \(kind) account of \(nodeKey)"
                    let value: JSONValue?
                    if let savedAccounts {
                        value = savedAccounts["\(nodeKey)/\(kind)"]
                    } else {
                        // The old total counted this account if its kind is this account's, or
                        // (another kind) it was the shown one, whose change the log names.
                        let old = savedTotals[nodeKey]
                        let matches = old?["kind"]?.stringValue == spec.description
                        value = matches || (index == state.setup.shown && !state.accounts.contains { old?["kind"]?.stringValue == $0.spec.description }) ? old : nil
                    }
                    guard let value else { continue }
                    switch EnergyTotal.restored(from: value, spec: spec, maxDayKWh: maxDayKWh, times: times) {
                    case .restored(let total): restoredWidgets[position].nodes[node].accounts[index] = total
                    case .otherKind(let saved):
                        skipped.append(Diagnostic(.info, "state: \(what) was saved as \(saved ?? "another kind"); as \(spec) it starts at 0"))
                    case .beyondADay(let energy):
                        skipped.append(Diagnostic(.warning, """
                            state: \(what), \(JSONValue.format(PatchPolicy.quantize(energy, step: 0.01))) kWh, is damaged: more than its sources' max_power \
                            allow in a day (\(JSONValue.format(maxDayKWh)) kWh); left out
                            """))
                    case .damaged: skip(what)
                    }
                }
            }
        }
        var restoredPricing = pricing
        restoredPricing.unpricedSaid = []
        if restoredDay != nil, let tariff = config.tariff {
            let maxAmount = maxDayKWh * TariffConfig.largestPricePerKWh
            for position in restoredWidgets.indices where restoredWidgets[position].money != nil {
                let name = restoredWidgets[position].config.name
                guard let saved = state["money"]?[name] else { continue }
                switch DayMoney.restored(from: saved, currency: tariff.currency, maxAmount: maxAmount, maxDayKWh: maxDayKWh) {
                case .restored(let money): restoredWidgets[position].money = money
                case .otherCurrency(let code):
                    skipped.append(Diagnostic(.info, "state: the money of '\(name)' was counted in \(code); in \(tariff.currency) it starts at 0"))
                case .damaged: skip("the money of '\(name)'")
                }
            }
            skipped += restoredPricing.restore(from: state, currency: tariff.currency, times: times, skip: skip)
        }
        bank = restoredBank
        widgets = restoredWidgets
        day = restoredDay
        pricing = restoredPricing
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
