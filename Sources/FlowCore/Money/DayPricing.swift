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

    /// The wall clock stepped by `seconds` without that time passing.
    mutating func shift(by seconds: Double) {
        importPrices?.shift(by: seconds)
        exportPrices?.shift(by: seconds)
    }

    /// Takes back the saved prices of the day and which unpriced energy the log spoke of.
    mutating func restore(from state: JSONValue, times: ClosedRange<Double>, skip: (String) -> Void) {
        unpricedSaid = Set((state["unpriced_said"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(EnergyAccount.init(rawValue:)) })
        let savedPrices = state["prices"]
        importPrices = importPrices.map { $0.restored(from: savedPrices?[EnergyAccount.imported.rawValue], times: times, skip: skip) }
        exportPrices = exportPrices.map { $0.restored(from: savedPrices?[EnergyAccount.exported.rawValue], times: times, skip: skip) }
    }

    /// The import and export price at `instant` and when each next changes to another price (a
    /// DST change or a zone of the same price in between is no change), for `check`.
    public func priceOutlook(at instant: Date, zone: any LocalTimeZone) -> [(account: EnergyAccount, pricePerKWh: Double?, nextChange: Date?)] {
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
            return (account, now, next)
        }
    }
}
