import FlowCore
import FoundationEssentials

/// What another tariff would have billed: the stored slots' imported and exported kWh priced at
/// that tariff's prices in force in each slot, and its standing charge accrued over the slots'
/// time. A fixed price and time-of-use zones price any past slot; a price source's prices are not
/// in the book (it keeps each slot's price as billed, fees and VAT in), so such a tariff is refused.
public struct BookRepricing: Sendable {
    public let tariff: TariffConfig
    let importPrices: PriceTimeline
    let exportPrices: PriceTimeline?

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case priceSource(String)
        public var description: String {
            switch self {
            case .priceSource(let name):
                "the tariff's price comes from the source '\(name)', whose past prices the book does not hold: give a fixed price or zones"
            }
        }
    }

    public init(tariff: TariffConfig) throws(Problem) {
        for price in [tariff.importPrice, tariff.exportPrice].compactMap({ $0 }) {
            if let name = price.base.sourceName { throw .priceSource(name) }
        }
        self.tariff = tariff
        importPrices = PriceTimeline(config: tariff.importPrice, holdSeconds: nil)
        exportPrices = tariff.exportPrice.map { PriceTimeline(config: $0, holdSeconds: nil) }
    }

    /// The slot's money under this tariff. The standing charge is the slot's share of its local
    /// day's (a slot of a 25-hour day carries 1/100 of it), so whole days carry one day's each.
    public func money(of slot: ClosedSlot, zone: any LocalTimeZone) -> BookMoney {
        let accounts = BookMoney.sum(slot.energyKWh.values)
        let importPrice = importPrices.price(at: slot.start, zone: zone) ?? 0
        let exportPrice = exportPrices?.price(at: slot.start, zone: zone) ?? 0
        let day = zone.day(containing: slot.start)
        let share = ClosedSlot.seconds / day.end.timeIntervalSince(day.start)
        return BookMoney(
            currency: tariff.currency, importCost: (accounts[.imported] ?? 0) * importPrice,
            exportEarnings: (accounts[.exported] ?? 0) * exportPrice, standingCharge: tariff.standingChargePerDay * share)
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
