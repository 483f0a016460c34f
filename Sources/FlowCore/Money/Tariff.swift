import FoundationEssentials

/// What the grid charges and pays (`tariff:`): a price per kWh for import and for export, each
/// fixed, by time of use, or read from a price source, and a standing charge per day.
public struct TariffConfig: Sendable, Equatable {
    public var currency: Currency
    public var importPrice: PriceConfig
    /// Nil: exported energy earns nothing (and is not unpriced either).
    public var exportPrice: PriceConfig?
    /// Charged per local day whatever flows, accrued through the day (a 25-hour day still one day's).
    public var standingChargePerDay: Double

    /// A price beyond this (per kWh, in any direction) is a wrong unit, not a tariff: the highest
    /// day-ahead price cap in Europe is 4 EUR/kWh.
    public static let largestPricePerKWh = 100.0

    public init(currency: Currency = .euro, importPrice: PriceConfig, exportPrice: PriceConfig? = nil, standingChargePerDay: Double = 0) {
        self.currency = currency
        self.importPrice = importPrice
        self.exportPrice = exportPrice
        self.standingChargePerDay = standingChargePerDay
    }
}

extension FlowConfig {
    /// Whether the day's money of `widget` is counted: with a tariff, for a flow widget with an
    /// exchange node (the grid that bills and pays). The engine and the sensors ask the same.
    public func isPriced(_ widget: FlowWidgetConfig) -> Bool { tariff != nil && widget.exchange != nil }
}

/// One direction's price: a base price per kWh, then fees per kWh and VAT as a bill applies
/// them: (base + fees) × (1 + VAT).
public struct PriceConfig: Sendable, Equatable {
    public var base: PriceBase
    public var feesPerKWh: Double
    public var vatPercent: Double

    public init(base: PriceBase, feesPerKWh: Double = 0, vatPercent: Double = 0) {
        self.base = base
        self.feesPerKWh = feesPerKWh
        self.vatPercent = vatPercent
    }

    /// The price billed per kWh for a base price.
    public func billed(_ basePerKWh: Double) -> Double { (basePerKWh + feesPerKWh) * (1 + vatPercent / 100) }
}

/// Where a base price comes from.
public enum PriceBase: Sendable, Equatable {
    /// One price per kWh at all times.
    case fixed(Double)
    /// Prices by weekday and local time of day.
    case zones(TimeOfUseTable)
    /// The latest reading of a price source (`unit: EUR/MWh`…, converted to the currency per
    /// kWh), held for the source's `stale_after`; after that, no price.
    case source(String)

    public var sourceName: String? {
        if case .source(let name) = self { return name }
        return nil
    }
}
