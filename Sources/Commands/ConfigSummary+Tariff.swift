import FlowCore
import FoundationEssentials

/// What `check` says of `tariff:`: each direction's price, which applies now and when it next
/// changes, the standing charge, and which widgets it prices.
extension ConfigSummary {
    var tariffLines: [String] {
        guard let tariff = config.flow.tariff else { return [] }
        let currency = tariff.currency
        let pricing = DayPricing(config: config.flow)
        let outlook = pricing.priceOutlook(at: now, zone: zone)
        var lines = ["", "tariff (\(currency.code), amounts shown as \(currency.text(1.5)))"]
        for (account, price) in [(EnergyAccount.imported, Optional(tariff.importPrice)), (.exported, tariff.exportPrice)] {
            guard let price else {
                lines.append("  export: none (exported energy earns nothing)")
                continue
            }
            let found = outlook.first { $0.account == account }
            lines.append("  \(account): \(describe(price.base, currency: currency))")
            if case .zones(let table) = price.base {
                for zone in table.zones { lines.append("      \(describe(zone)): \(currency.priceText(zone.basePerKWh))") }
            }
            if let billed = billing(price, currency: currency) { lines.append("      billed: \(billed)") }
            lines.append("      now: \(describeNow(found, source: price.base.sourceName, currency: currency))")
        }
        lines.append("  standing charge: \(currency.text(tariff.standingChargePerDay)) per day, accrued through the local day")
        let priced = config.flow.widgets.filter { $0.exchange != nil }.map { widget in
            "\(widget.name) (import and export of the exchange\(widget.output != nil ? "; consumption at the import price, for saved" : ""))"
        }
        lines.append("  prices: \(priced.joined(separator: ", "))")
        return lines
    }

    /// The base price: a number, the zones, or the source.
    func describe(_ base: PriceBase, currency: Currency) -> String {
        switch base {
        case .fixed(let value): return currency.priceText(value)
        case .zones: return "by the zones below (local time, \(zone.identifier))"
        case .source(let name):
            let source = config.flow.sources.first { $0.name == name }
            if let source, source.schedule != nil {
                return "the schedule of source '\(name)' (topic \(source.topic), \(source.unit.configText(currency: source.priceCurrency))): each slot's price over its own times, unpriced where no slot covers"
            }
            let hold = source?.staleAfterSeconds.map { "held for its stale_after (\(durationText(seconds: $0))), then unpriced" } ?? "held until the next (stale_after: never)"
            return "the latest price of source '\(name)'\(source.map { " (topic \($0.topic), \($0.unit.configText(currency: $0.priceCurrency)))" } ?? ""), \(hold)"
        }
    }

    /// `(price + €0.120/kWh fees) × 1.19 (VAT 19 %)`; nil without fees or VAT.
    func billing(_ price: PriceConfig, currency: Currency) -> String? {
        guard price.feesPerKWh != 0 || price.vatPercent != 0 else { return nil }
        var formula = price.feesPerKWh != 0 ? "(price + \(currency.priceText(price.feesPerKWh)) fees)" : "price"
        if price.vatPercent != 0 { formula += " × \(JSONValue.format(1 + price.vatPercent / 100)) (VAT \(JSONValue.format(price.vatPercent)) %)" }
        return formula
    }

    /// `mon-fri 07:00–22:00`, `the rest`.
    func describe(_ zone: TimeOfUseZone) -> String {
        guard !zone.isRest else { return "the rest" }
        // Runs of consecutive days, Monday first: `mon-fri`, `sat,sun` as `sat-sun`, `daily`.
        var runs: [String] = []
        var run: [Weekday] = []
        for day in Weekday.allCases {
            if zone.days.contains(day) { run.append(day) }
            if !zone.days.contains(day) || day == .sunday, let first = run.first, let last = run.last {
                runs.append(first == last ? "\(first)" : "\(first)-\(last)")
                run = []
            }
        }
        let days = zone.days.count == 7 ? "daily" : runs.joined(separator: ",")
        return "\(days) \(TimeOfUseTable.clockText(minute: zone.fromMinute))–\(TimeOfUseTable.clockText(minute: zone.toMinute))"
    }

    /// `€0.417/kWh until 22:00, then €0.298/kWh`, or what a price source needs first.
    func describeNow(_ outlook: PriceOutlook?, source: String?, currency: Currency) -> String {
        guard let pricePerKWh = outlook?.pricePerKWh else {
            let what = config.flow.sources.first { $0.name == source }?.schedule != nil ? "a schedule with a slot for now" : "one"
            return "unknown until the price source sends \(what) (energy before it is counted as unpriced)"
        }
        guard let next = outlook?.nextChange else { return "\(currency.priceText(pricePerKWh)) at all times" }
        return "\(currency.priceText(pricePerKWh)) until \(zone.clockText(at: next, today: now))\(outlook?.nextPricePerKWh.map { ", then \(currency.priceText($0))" } ?? "")"
    }
}
