import FoundationEssentials

/// The day's money: every stretch of energy an account counts on the grid (import, export) and
/// at the output (consumption, for what the grid alone would have cost) priced at the price in
/// force while it flowed, the price sources' prices taken as they come, and the standing charge
/// accrued through the local day.
extension FlowEngine {
    /// What the money makes of `account` of the node at `place`: the amount its energy adds to,
    /// and whether the export price (else the import price) prices it. The grid's import and
    /// export are billed and paid; the output's consumption at the import price is what the grid
    /// alone would have billed. Nil for what the money does not count.
    static func pricing(of account: EnergyAccount, at place: NodePlace) -> (amount: WritableKeyPath<DayMoney, Double>, byExportPrice: Bool)? {
        switch (account, place) {
        case (.imported, .exchange): (\.importCost, false)
        case (.exported, .exchange): (\.exportEarnings, true)
        case (.consumption, .output): (\.gridOnlyCost, false)
        default: nil
        }
    }

    /// Takes what an account of the node at `place` (in widget `position`) just counted: priced,
    /// and, where the widget derives its output, moving the output's day by as much (its supply
    /// adds, its use takes away). So the derived home's day is the balance of the other accounts
    /// to the Wh, whichever meter of a moment reports first, and its money is that consumption at
    /// the import price stretch by stretch.
    mutating func count(_ span: EnergySpan, _ account: EnergyAccount, at place: NodePlace, inWidget position: Int, into out: inout [Output]) {
        price(span, account, at: place, inWidget: position, into: &out)
        guard place != .output, let movedKWh = board.widgets[position].flow!.moveBalance(byKWh: account.isSupply ? span.energyKWh : -span.energyKWh)
        else { return }
        var moved = span
        moved.energyKWh = movedKWh
        price(moved, .consumption, at: .output, inWidget: position, into: &out)
    }

    /// Adds what `span` of `account` (of the node at `place`, in widget `position`) cost or
    /// earned, stretch by stretch at the price in force; energy without a price is counted apart.
    mutating func price(_ span: EnergySpan, _ account: EnergyAccount, at place: NodePlace, inWidget position: Int, into out: inout [Output]) {
        guard board.widgets[position].flow!.money != nil, let (amount, byExportPrice) = Self.pricing(of: account, at: place),
            let (pricedAmount, unpriced) = self.priced(span, byExportPrice: byExportPrice)
        else { return }
        board.widgets[position].flow!.money![keyPath: amount] += pricedAmount
        guard unpriced > 0 else { return }
        board.widgets[position].flow!.money!.unpricedKWh[account, default: 0] += unpriced
        // Less than a Wh (a reading a moment before the first price) is not worth the day's line.
        guard board.widgets[position].flow!.money!.unpricedKWh[account]! >= MoneyReport.unpricedShownKWh else { return }
        reportUnpriced(byExportPrice ? .exported : .imported, at: span.end, into: &out)
    }

    /// What `span` costs at the import (or export) prices in force while it flowed, and the part of
    /// it that flowed without a price (kWh); nil without such a price in the tariff.
    func priced(_ span: EnergySpan, byExportPrice: Bool) -> (amount: Double, unpricedKWh: Double)? {
        guard pricing.prices(byExportPrice: byExportPrice) != nil else { return nil }
        var amount = 0.0
        var unpriced = 0.0
        pricing.forEachStretch(byExportPrice: byExportPrice, from: span.start, to: span.end, zone: zone) { from, to, price in
            let energy = span.energyKWh(from: from, to: to)
            if let price { amount += energy * price } else { unpriced += energy }
        }
        return (amount, unpriced)
    }

    /// Once a day per direction: energy flowed without a price, and why.
    mutating func reportUnpriced(_ side: EnergyAccount, at now: Date, into out: inout [Output]) {
        guard !pricing.unpricedSaid.contains(side), let prices = side == .exported ? pricing.exportPrices : pricing.importPrices else { return }
        pricing.unpricedSaid.insert(side)
        var why = "it has no price"
        if let position = side == .exported ? pricing.exportPriceSource : pricing.importPriceSource {
            let source = bank.sources[position].config
            if source.schedule != nil {
                let end = prices.schedule.slots.last.map { ", and its schedule runs to \(zone.clockText(at: $0.end, today: now))" } ?? ""
                why = "its schedule source '\(source.name)' (topic \(source.topic)) has no slot for this time\(end)"
            } else if let last = prices.points.last, let hold = prices.holdSeconds {
                why = "its price source '\(source.name)' (topic \(source.topic)) has sent no price since \(zone.clockText(at: last.heard, today: now)), and a price holds for its stale_after (\(durationText(seconds: hold)))"
            } else {
                why = "its price source '\(source.name)' (topic \(source.topic)) has sent no price yet"
            }
        }
        out.append(.diagnostic(Diagnostic(
            .warning,
            "tariff: \(side) energy flows without a price: \(why); it is counted as unpriced, never at a made-up price, until a price comes (said once a day)"
        )))
    }

    /// A price source's accepted readings set its direction's price from `now`.
    mutating func takePrices(from accepted: [Int], at now: Date) {
        guard pricing.importPriceSource != nil || pricing.exportPriceSource != nil else { return }
        for source in accepted where source == pricing.importPriceSource || source == pricing.exportPriceSource {
            guard let price = bank.sources[source].reading?.value else { continue }
            if source == pricing.importPriceSource { pricing.importPrices?.take(price, at: now) }
            if source == pricing.exportPriceSource { pricing.exportPrices?.take(price, at: now) }
        }
    }

    /// A schedule source's payload: its slots, converted as a single price is (unit, scale,
    /// invert), set their direction's prices, whether the message is live or the broker's retained
    /// copy: each slot says itself when it is in force. Returns why the payload is refused, or nil.
    mutating func takeSchedule(_ payload: [UInt8], of position: Int, at now: Date) -> (problem: String, reason: Refusal.Reason)? {
        let setup = bank.sources[position].setup
        guard let format = setup.config.schedule else { return nil }
        let raw: [ScheduleSlot]
        switch format.decode(payload, path: setup.config.decoder.path) {
        case .noSchedule:
            bank.sources[position].stats.noReading += 1
            return nil
        case .invalid(let error): return (error.description, .undecodable(error))
        case .slots(let slots): raw = slots
        }
        var slots: [PriceSlot] = []
        slots.reserveCapacity(raw.count)
        for (index, slot) in raw.enumerated() {
            guard let price = slot.price.map(setup.config.convert) else { continue }
            guard price.isFinite, abs(price) <= TariffConfig.largestPricePerKWh else {
                let problem = "slot \(index + 1) (from \(RFC3339.format(slot.start))): a price of \(JSONValue.format(price)) per kWh is beyond \(JSONValue.format(TariffConfig.largestPricePerKWh)) per kWh: a wrong unit (EUR/MWh given as EUR/kWh?); the schedule is not read"
                return (problem, .implausible(problem))
            }
            slots.append(PriceSlot(start: slot.start, end: slot.end, basePerKWh: price))
        }
        bank.sources[position].stats.readings += 1
        bank.sources[position].lastValueAt = max(bank.sources[position].lastValueAt ?? now, now)
        if position == pricing.importPriceSource { pricing.importPrices?.take(schedule: slots, at: now) }
        if position == pricing.exportPriceSource { pricing.exportPrices?.take(schedule: slots, at: now) }
        // The source's reading is the schedule's price now: what `check --listen` and the window show.
        if let price = slots.first(where: { $0.start <= now && now < $0.end })?.basePerKWh {
            bank.sources[position].reading = Reading(value: price, at: now)
        }
        return nil
    }

    /// Forgets the prices older than any stretch still to be priced, once the accounts took a
    /// message at `now`. The state then holds the prices the pending stretches need and no more:
    /// when the last stretch that reached back past a price change is priced, the older price goes,
    /// and the state is saved (see `SavePolicy`) with the accounts already past the change, so a
    /// restart prices what comes after it as the run without the restart does. Only a timeline
    /// holding an older price asks where the pending stretches begin.
    mutating func forgetPassedPrices(at now: Date) {
        guard pricing.importPrices?.holdsPassedPrices(at: now) ?? false || pricing.exportPrices?.holdsPassedPrices(at: now) ?? false else { return }
        let horizon = pendingSince ?? now
        pricing.importPrices?.forget(before: horizon)
        pricing.exportPrices?.forget(before: horizon)
    }

    /// The earliest instant a stretch still to be priced can start at: a priced account's last
    /// sample, or its counter's last reading. Where the widget derives its output, every other
    /// account's stretch moves it (`count`), and the share it moves is priced as the output's
    /// consumption: a solar counter read every five minutes prices the home's use back to its last
    /// reading.
    var pendingSince: Date? {
        var earliest: Date?
        for position in flowPositions where board.widgets[position].flow!.money != nil {
            let derivesOutput = board.widgets[position].flow!.countedBalanceNode != nil
            for node in board.widgets[position].flow!.nodes.indices {
                let setup = board.widgets[position].flow!.nodes[node].setup
                for account in setup.accountKinds.indices
                where Self.pricing(of: setup.accountKinds[account], at: setup.place) != nil || derivesOutput && setup.place != .output {
                    let total = board.widgets[position].flow!.nodes[node].accounts[account]
                    for time in [total.lastSample.map { total.countedUntil ?? $0.at }, total.counter?.lastAt] {
                        if let time, earliest.map({ time < $0 }) ?? true { earliest = time }
                    }
                }
            }
        }
        return earliest
    }

    /// The standing charge accrued through the local day at `now`.
    func standingCharge(at now: Date) -> Double {
        day.map { standingCharge(at: now, in: $0) } ?? 0
    }

    /// The standing charge accrued through `day` at `now`.
    func standingCharge(at now: Date, in day: LocalDay) -> Double {
        guard let tariff = config.tariff else { return 0 }
        let share = now.timeIntervalSince(day.start) / day.end.timeIntervalSince(day.start)
        return tariff.standingChargePerDay * min(1, max(0, share))
    }

    /// Widget `position`'s money at `now`; nil when it is not priced.
    func moneyReport(of position: Int, at now: Date) -> MoneyReport? {
        guard let money = board.widgets[position].flow!.money, let tariff = config.tariff else { return nil }
        return money.report(
            standingCharge: standingCharge(at: now), currency: tariff.currency, hasConsumption: board.widgets[position].flow!.config.output != nil,
            importPrice: pricing.importPrices?.price(at: now, zone: zone), exportPrice: pricing.exportPrices?.price(at: now, zone: zone),
            dayStart: day?.start)
    }

    /// The money of flow widget `name` as of the latest event; nil when it is not priced.
    public func money(ofWidget name: String) -> MoneyReport? {
        guard let position = flowPositions.first(where: { board.widgets[$0].name == name }), let now = latestKnownTime else { return nil }
        return moneyReport(of: position, at: now)
    }

    /// The slots schedule source `name` set and the engine still holds (base prices per kWh,
    /// before fees and VAT), oldest first: what `check --listen` shows of a schedule.
    public func scheduleSlots(ofSource name: String) -> [PriceSlot] {
        guard let position = bank.sources.firstIndex(where: { $0.config.name == name }) else { return [] }
        if position == pricing.importPriceSource { return pricing.importPrices?.schedule.slots ?? [] }
        if position == pricing.exportPriceSource { return pricing.exportPrices?.schedule.slots ?? [] }
        return []
    }

    /// The import and export price at `instant` and when each next changes (see `DayPricing`).
    public func priceOutlook(at instant: Date) -> [PriceOutlook] {
        pricing.priceOutlook(at: instant, zone: zone)
    }
}
