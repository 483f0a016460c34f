import FlowCore
import FoundationEssentials

/// What another tariff would have billed: the stored slots' imported and exported kWh priced at
/// that tariff's prices in force in each slot, and its standing charge accrued over the slots'
/// time. A fixed price and time-of-use zones price any past slot; a price source's past prices are
/// not in the book (it keeps each slot's price as billed, fees and VAT in), so they come from a
/// price list the person gives (`PriceFile`), and a source without one is refused.
public struct BookRepricing: Sendable {
    public let tariff: TariffConfig
    let importPrices: PriceTimeline
    let exportPrices: PriceTimeline?

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case priceSource(String)
        public var description: String {
            switch self {
            case .priceSource(let name):
                "the tariff's price comes from the source '\(name)', whose past prices the book does not hold: give them with --prices FILE.csv (a column '\(name)'), or give a fixed price or zones"
            }
        }
    }

    /// `prices`: the past prices of the sources the tariff names, by name.
    public init(tariff: TariffConfig, prices: [String: PriceSchedule] = [:]) throws(Problem) {
        func timeline(_ config: PriceConfig) throws(Problem) -> PriceTimeline {
            guard let name = config.base.sourceName else { return PriceTimeline(config: config, holdSeconds: nil) }
            guard let schedule = prices[name] else { throw .priceSource(name) }
            return PriceTimeline(config: config, schedule: schedule)
        }
        self.tariff = tariff
        importPrices = try timeline(tariff.importPrice)
        exportPrices = try tariff.exportPrice.map { price throws(Problem) in try timeline(price) }
    }

    /// The slot's money under this tariff. Its energy is taken as spread evenly over its 15
    /// minutes: where the price changes inside the slot, each part is priced at its own, and a part
    /// without a price is unpriced, never priced at 0. The standing charge is the slot's share of
    /// its local day's (a slot of a 25-hour day carries 1/100 of it), so whole days carry one day's each.
    public func money(of slot: ClosedSlot, zone: any LocalTimeZone) -> BookMoney {
        let accounts = BookMoney.sum(slot.energyKWh.values)
        let day = zone.day(containing: slot.start)
        var money = BookMoney(
            currency: tariff.currency, importCost: 0, exportEarnings: 0, standingCharge: tariff.standingChargePerDay * ClosedSlot.seconds / day.end.timeIntervalSince(day.start))
        for (account, prices, amount) in [(EnergyAccount.imported, importPrices, \BookMoney.importCost), (.exported, exportPrices, \.exportEarnings)] {
            guard let energyKWh = accounts[account], energyKWh != 0 else { continue }
            guard let prices else { continue }  // no export price: exporting earns nothing
            prices.forEachStretch(from: slot.start, to: slot.start.addingTimeInterval(ClosedSlot.seconds), zone: zone) { from, to, price in
                let partKWh = energyKWh * to.timeIntervalSince(from) / ClosedSlot.seconds
                if let price { money[keyPath: amount] += partKWh * price } else { money.unpricedKWh[account, default: 0] += partKWh }
            }
        }
        return money
    }

    /// The rows of `period` under this tariff: the book's rows with their money priced again.
    public func rows(of period: BookPeriod, by grouping: BookGrouping, in book: DayBook, zone: any LocalTimeZone) throws(BookError) -> [BookRow] {
        let billed = try book.rows(of: period, by: grouping, zone: zone)
        guard let first = zone.day(on: period.first), let last = zone.day(on: period.last) else { return billed }
        let slots = try book.slots(from: first.start, to: last.end)
        return billed.map { row in
            var priced = row
            var total = BookMoney(currency: tariff.currency, importCost: 0, exportEarnings: 0, standingCharge: 0)
            for slot in slots where slot.widget == row.widget && slot.start >= row.start && slot.start < row.end {
                total.add(money(of: slot, zone: zone))
            }
            priced.money = total
            return priced
        }
    }
}
