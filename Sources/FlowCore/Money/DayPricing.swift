import FoundationEssentials

/// The day's pricing: the import and export price over time, the sources that set them, and which
/// directions' unpriced energy the log heard of today. A part of the engine of its own, so that
/// `check` can ask what a kWh costs now and next without building an engine.
public struct DayPricing: Sendable {
    /// The import and export price over time (nil without a tariff, or without an export price).
    var importPrices: PriceTimeline?
    var exportPrices: PriceTimeline?
    /// The sources that set them, by position in the config's sources.
    let importPriceSource: Int?
    let exportPriceSource: Int?
    /// Which timelines' unpriced energy the log heard of today: once a day each.
    var unpricedSaid: Set<EnergyAccount> = []
    /// The prices of the tariff a reload replaced, for what flowed before the reload.
    var past: PastPrices?

    public init(config: FlowConfig) {
        func timeline(_ price: PriceConfig?) -> (PriceTimeline?, Int?) {
            guard let price else { return (nil, nil) }
            let source = price.base.sourceName.flatMap { name in config.sources.firstIndex { $0.name == name } }
            return (PriceTimeline(config: price, holdSeconds: source.flatMap { config.sources[$0].staleAfterSeconds }), source)
        }
        (importPrices, importPriceSource) = timeline(config.tariff?.importPrice)
        (exportPrices, exportPriceSource) = timeline(config.tariff?.exportPrice)
    }

    /// The prices of one side: the export price for exported energy, else the import price.
    func prices(byExportPrice: Bool) -> PriceTimeline? { byExportPrice ? exportPrices : importPrices }

    /// Calls `body` for each stretch of `start..<end` with one billed price (nil: unknown), in
    /// order: before a reload at the prices it replaced, after it at the side's timeline. Nothing
    /// for a side without a price (exported energy without an export price earns nothing).
    func forEachStretch(byExportPrice: Bool, from start: Date, to end: Date, zone: any LocalTimeZone, _ body: (Date, Date, Double?) -> Void) {
        guard let prices = prices(byExportPrice: byExportPrice) else { return }
        var at = start
        if let past, at < past.until {
            let side: EnergyAccount = byExportPrice ? .exported : .imported
            let pastEnd = min(end, past.until)
            repeat {
                let (price, stretchEnd) = past.stretch(of: side, at: at)
                var next = min(stretchEnd, pastEnd)
                if next <= at, at < pastEnd { next = pastEnd }  // never a stretch of no time inside the span
                body(at, next, price)
                at = next
            } while at < pastEnd
            guard end > past.until else { return }
        }
        prices.forEachStretch(from: at, to: end, zone: zone, body)
    }

    /// The prices in force from `since` to a reload at `until`, as the stretches that keep them
    /// once this pricing is replaced; `sameCurrency` false when the new tariff counts in another
    /// currency (these prices then say nothing: the energy is unpriced). A side without a price
    /// earned nothing then: 0.
    func past(from since: Date, until: Date, zone: any LocalTimeZone, sameCurrency: Bool) -> PastPrices {
        var stretches: [EnergyAccount: [PastPrices.Stretch]] = [:]
        for side in [EnergyAccount.imported, .exported] {
            let byExportPrice = side == .exported
            guard prices(byExportPrice: byExportPrice) != nil else {
                stretches[side] = [PastPrices.Stretch(from: since, pricePerKWh: 0)]
                continue
            }
            var list: [PastPrices.Stretch] = []
            forEachStretch(byExportPrice: byExportPrice, from: since, to: until, zone: zone) { from, _, price in
                list.append(PastPrices.Stretch(from: from, pricePerKWh: sameCurrency ? price : nil))
            }
            stretches[side] = list
        }
        return PastPrices(until: until, stretches: stretches)
    }

    /// The wall clock stepped by `seconds` without that time passing.
    mutating func shift(by seconds: Double) {
        importPrices?.shift(by: seconds)
        exportPrices?.shift(by: seconds)
        past?.shift(by: seconds)
    }

    /// Takes back the saved prices of the day and which unpriced energy the log spoke of. Prices
    /// saved in another currency than `currency` are left out, as the money is; the returned
    /// diagnostics say so.
    mutating func restore(from state: JSONValue, currency: Currency, times: ClosedRange<Double>, skip: (String) -> Void) -> [Diagnostic] {
        unpricedSaid = Set((state["unpriced_said"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(EnergyAccount.init(rawValue:)) })
        var said: [Diagnostic] = []
        // A state of an older release names no currency with its prices: the money's is theirs.
        let moneyCurrency = state["money"]?.objectValue?.values.lazy.compactMap { $0["currency"]?.stringValue }.first
        func restored(_ timeline: PriceTimeline?, _ account: EnergyAccount) -> PriceTimeline? {
            guard let timeline, let saved = state["prices"]?[account.rawValue] else { return timeline }
            let savedCurrency = saved["currency"]?.stringValue ?? moneyCurrency
            if let savedCurrency, savedCurrency != currency.code, let source = timeline.config.base.sourceName {
                said.append(Diagnostic(.info, "state: the \(account) prices of '\(source)' were in \(savedCurrency); in \(currency) they are left out until a price comes"))
            }
            return timeline.restored(from: saved, savedCurrency: savedCurrency, currency: currency, times: times, skip: skip)
        }
        importPrices = restored(importPrices, .imported)
        exportPrices = restored(exportPrices, .exported)
        past = PastPrices.restored(from: state["past_prices"], currency: currency, times: times)
        return said
    }

    /// The import and export price at `instant`, when each next changes to another price (a DST
    /// change or a zone of the same price in between is no change) and to what (nil: unknown,
    /// such as where a schedule runs out), for `check`, the window and `price_now`.
    public func priceOutlook(at instant: Date, zone: any LocalTimeZone) -> [PriceOutlook] {
        [(EnergyAccount.imported, importPrices), (.exported, exportPrices)].compactMap { account, prices in
            guard let prices else { return nil }
            let now = prices.price(at: instant, zone: zone)
            var next = prices.nextChange(after: instant, zone: zone)
            // Zones repeat each week: a price that has not changed in eight days never does.
            let horizon = instant.addingTimeInterval(8 * 86_400)
            while let found = next, found < horizon, prices.price(at: found, zone: zone) == now {
                next = prices.nextChange(after: found, zone: zone)
            }
            if let found = next, found >= horizon || prices.price(at: found, zone: zone) == now { next = nil }
            return PriceOutlook(account: account, pricePerKWh: now, nextChange: next, nextPricePerKWh: next.flatMap { prices.price(at: $0, zone: zone) })
        }
    }
}

extension DayPricing {
    /// `price_now`: the import price now, fees and VAT in, and the next price where it is known
    /// (a schedule's next slot, a zone's): `Now €0.312/kWh, €0.280 from 14:00`; `Now €0.312/kWh`
    /// without one, `No price now` while there is none (a price source silent past its
    /// `stale_after`, a schedule run out). The text changes only where the price does.
    func priceNowText(at now: Date, zone: any LocalTimeZone, currency: Currency) -> String {
        guard let outlook = priceOutlook(at: now, zone: zone).first(where: { $0.account == .imported }), let price = outlook.pricePerKWh else {
            return "No price now"
        }
        guard let next = outlook.nextChange, let then = outlook.nextPricePerKWh else { return "Now \(currency.priceText(price))" }
        // The clock alone within a day (a schedule's next slot, tonight's zone), the date beyond.
        let when = zone.clockText(at: next, today: next.timeIntervalSince(now) < 86_400 ? next : now)
        return "Now \(currency.priceText(price)), \(currency.written(then, decimals: 3)) from \(when)"
    }
}

/// One direction's price now and what comes next.
public struct PriceOutlook: Sendable, Equatable {
    public var account: EnergyAccount
    /// The billed price per kWh now (fees and VAT in); nil when unknown.
    public var pricePerKWh: Double?
    /// When it next changes to another price; nil when it never does, as far as is known now.
    public var nextChange: Date?
    /// The billed price from `nextChange` on; nil when unknown (a schedule that runs out there).
    public var nextPricePerKWh: Double?

    public init(account: EnergyAccount, pricePerKWh: Double?, nextChange: Date?, nextPricePerKWh: Double?) {
        self.account = account
        self.pricePerKWh = pricePerKWh
        self.nextChange = nextChange
        self.nextPricePerKWh = nextPricePerKWh
    }
}
