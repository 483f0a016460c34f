import FoundationEssentials

/// One flow widget's closed 15-minute slot: what the day book keeps of a day's course, so that any
/// past period can be summed and priced again.
///
/// Slots are aligned on UTC (their start a multiple of 900 s since the epoch), not on the local
/// clock: a local day of 23 hours holds 92 slots and one of 25 hours 100, and no slot ever spans a
/// clock change. A slot's accounts add up to the day's like the day's add up to the week's: the
/// sum of a day's slots is its day row.
public struct ClosedSlot: Sendable, Equatable {
    /// A slot's length.
    public static let seconds: Double = 900

    /// The flow widget whose nodes the slot counts.
    public var widget: String
    /// The slot's first instant, a multiple of `seconds` since the Unix epoch.
    public var start: Date
    /// Each node's energy in the slot by account, kWh at full resolution, keyed by the node's
    /// place as the state names it (`inputs[0]`, `exchange`).
    public var energyKWh: [String: [EnergyAccount: Double]]
    /// The slot's money; nil without a tariff, or for a widget without an exchange to price.
    public var money: SlotMoney?

    public init(widget: String, start: Date, energyKWh: [String: [EnergyAccount: Double]], money: SlotMoney? = nil) {
        self.widget = widget
        self.start = start
        self.energyKWh = energyKWh
        self.money = money
    }

    /// The start of the slot that holds `instant`.
    public static func start(of instant: Date) -> Date {
        Date(timeIntervalSince1970: (instant.timeIntervalSince1970 / seconds).rounded(.down) * seconds)
    }
}

/// A slot's money, as billed: the amounts, and the prices that made them.
public struct SlotMoney: Sendable, Equatable {
    public var currency: Currency
    public var importCost: Double
    public var exportEarnings: Double
    /// The standing charge accrued over the slot's time.
    public var standingCharge: Double
    /// The price per kWh (fees and VAT in) billed in the slot: the cost over the priced energy
    /// where energy flowed, else the price in force in the slot's last instant (1 ms before its
    /// end, so that a time-of-use change on the boundary is the next slot's); nil when none was known.
    public var importPricePerKWh: Double?
    public var exportPricePerKWh: Double?
    /// Energy that flowed without a known price, by account.
    public var unpricedKWh: [EnergyAccount: Double]

    public init(
        currency: Currency, importCost: Double, exportEarnings: Double, standingCharge: Double,
        importPricePerKWh: Double?, exportPricePerKWh: Double?, unpricedKWh: [EnergyAccount: Double] = [:]
    ) {
        self.currency = currency
        self.importCost = importCost
        self.exportEarnings = exportEarnings
        self.standingCharge = standingCharge
        self.importPricePerKWh = importPricePerKWh
        self.exportPricePerKWh = exportPricePerKWh
        self.unpricedKWh = unpricedKWh
    }

    /// Import cost − export earnings + standing charge.
    public var netCost: Double { importCost - exportEarnings + standingCharge }

    /// Below a Wh of priced energy, an amount over it says little of the price: the price in force
    /// is the slot's.
    static let billedPriceMinimumKWh = 0.001

    /// The price billed for `account`'s energy (`energyKWh`, of which `unpricedKWh` without a
    /// price): the amount over the priced energy; nil below `billedPriceMinimumKWh` of it.
    static func billedPrice(_ amount: Double, energyKWh: Double, unpricedKWh: Double) -> Double? {
        let pricedKWh = energyKWh - unpricedKWh
        return pricedKWh > billedPriceMinimumKWh ? amount / pricedKWh : nil
    }

    /// Adds what energy of `account` counted late in the slot cost or earned, and what of it had
    /// no price; the billed price follows (`exchangeKWh`: the slot's grid energy, with it).
    mutating func add(_ amount: Double, unpricedKWh: Double, of account: EnergyAccount, exchangeKWh: [EnergyAccount: Double]) {
        if unpricedKWh > 0 { self.unpricedKWh[account, default: 0] += unpricedKWh }
        let (total, price): (WritableKeyPath<Self, Double>, WritableKeyPath<Self, Double?>)
        switch account {
        case .imported: (total, price) = (\.importCost, \.importPricePerKWh)
        case .exported: (total, price) = (\.exportEarnings, \.exportPricePerKWh)
        default: return
        }
        self[keyPath: total] += amount
        self[keyPath: price] =
            Self.billedPrice(self[keyPath: total], energyKWh: exchangeKWh[account] ?? 0, unpricedKWh: self.unpricedKWh[account] ?? 0)
            ?? self[keyPath: price]
    }
}
