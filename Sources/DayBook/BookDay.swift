import FlowCore
import FoundationEssentials

/// One flow widget's closed local day as the book keeps it: each node's accounts, the day's
/// length, the battery's range and the money billed.
public struct BookDay: Sendable, Equatable {
    public var widget: String
    public var date: CivilDate
    /// The day's first instant and the next day's (a day of 23 or 25 hours is one too).
    public var start: Date
    public var end: Date
    public var hours: Double
    /// Each node's accounts (kWh), by the node's place (`inputs[0]`, `exchange`).
    public var nodeAccountsKWh: [String: [EnergyAccount: Double]]
    public var levelRangePercent: ClosedRange<Double>?
    public var money: BookMoney?

    public init(
        widget: String, date: CivilDate, start: Date, end: Date, hours: Double, nodeAccountsKWh: [String: [EnergyAccount: Double]],
        levelRangePercent: ClosedRange<Double>? = nil, money: BookMoney? = nil
    ) {
        self.widget = widget
        self.date = date
        self.start = start
        self.end = end
        self.hours = hours
        self.nodeAccountsKWh = nodeAccountsKWh
        self.levelRangePercent = levelRangePercent
        self.money = money
    }

    /// The widget's accounts: its nodes' summed by direction (two inputs' production is one).
    public var accountsKWh: [EnergyAccount: Double] { BookMoney.sum(nodeAccountsKWh.values) }

    /// Each flow widget's row of a closed day (`zone` finds its bounds).
    public static func rows(of closed: FlowEngine.ClosedDay, zone: any LocalTimeZone) -> [BookDay] {
        let bounds = zone.day(on: closed.date)
        let start = bounds?.start ?? Date(timeIntervalSince1970: Double(closed.date.daysSinceEpoch) * 86_400)
        let end = bounds?.end ?? start.addingTimeInterval(closed.hours * 3600)
        let widgets = Set(closed.nodeAccountsKWh.keys).union(closed.money.keys)
        return widgets.sorted().map { widget in
            BookDay(
                widget: widget, date: closed.date, start: start, end: end, hours: closed.hours,
                nodeAccountsKWh: closed.nodeAccountsKWh[widget] ?? [:], levelRangePercent: closed.levelRangePercent[widget],
                money: closed.money[widget].map(BookMoney.init(report:)))
        }
    }
}

/// The money of a slot, a day or a period, in one currency.
public struct BookMoney: Sendable, Equatable {
    public var currency: Currency
    public var importCost: Double
    public var exportEarnings: Double
    public var standingCharge: Double
    /// What the panels and the battery saved against the grid alone; nil where unknown (a widget
    /// without an output, a slot: the book keeps it by the day).
    public var saved: Double?
    /// Energy that flowed while its price was unknown, by account.
    public var unpricedKWh: [EnergyAccount: Double]

    public init(
        currency: Currency, importCost: Double, exportEarnings: Double, standingCharge: Double, saved: Double? = nil,
        unpricedKWh: [EnergyAccount: Double] = [:]
    ) {
        self.currency = currency
        self.importCost = importCost
        self.exportEarnings = exportEarnings
        self.standingCharge = standingCharge
        self.saved = saved
        self.unpricedKWh = unpricedKWh
    }

    public init(report: MoneyReport) {
        self.init(
            currency: report.currency, importCost: report.importCost, exportEarnings: report.exportEarnings,
            standingCharge: report.standingCharge, saved: report.saved, unpricedKWh: report.unpricedKWh)
    }

    public init(slot: SlotMoney) {
        self.init(
            currency: slot.currency, importCost: slot.importCost, exportEarnings: slot.exportEarnings,
            standingCharge: slot.standingCharge, unpricedKWh: slot.unpricedKWh)
    }

    /// Import cost − export earnings + standing charge: the bill.
    public var netCost: Double { importCost - exportEarnings + standingCharge }

    /// Adds `other` (same currency): a period's money is the sum of its days'. A saving unknown
    /// on either side is unknown in the sum.
    public mutating func add(_ other: BookMoney) {
        importCost += other.importCost
        exportEarnings += other.exportEarnings
        standingCharge += other.standingCharge
        saved = saved.flatMap { mine in other.saved.map { mine + $0 } }
        unpricedKWh = Self.sum([unpricedKWh, other.unpricedKWh])
    }

    /// Accounts added up by direction.
    public static func sum(_ accounts: some Sequence<[EnergyAccount: Double]>) -> [EnergyAccount: Double] {
        var total: [EnergyAccount: Double] = [:]
        for node in accounts {
            for (account, energy) in node { total[account, default: 0] += energy }
        }
        return total
    }
}
