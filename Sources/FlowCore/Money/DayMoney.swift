import FoundationEssentials

/// A flow widget's money of the local day so far, in the tariff's currency: each amount is the
/// sum, over every stretch of energy counted, of its kWh times the price in force while it flowed.
/// Reset at local midnight with the accounts, and saved with them.
public struct DayMoney: Sendable, Equatable {
    /// Imported kWh × the import price (fees and VAT in): what the grid bills for energy. A
    /// negative price makes it smaller: importing then earns.
    public var importCost = 0.0
    /// Exported kWh × the export price: what the grid pays. A negative export price makes it
    /// negative: exporting then costs.
    public var exportEarnings = 0.0
    /// Consumed kWh × the import price: what the home's use would have cost from the grid alone.
    public var gridOnlyCost = 0.0
    /// Energy that flowed while its price was unknown (a price source silent past its
    /// `stale_after`), by account: counted apart, never priced at a made-up price.
    public var unpricedKWh: [EnergyAccount: Double] = [:]

    public init(importCost: Double = 0, exportEarnings: Double = 0, gridOnlyCost: Double = 0, unpricedKWh: [EnergyAccount: Double] = [:]) {
        self.importCost = importCost
        self.exportEarnings = exportEarnings
        self.gridOnlyCost = gridOnlyCost
        self.unpricedKWh = unpricedKWh
    }


    /// The day's money with the standing charge accrued so far: what the sensors, the bars and
    /// the log show.
    public func report(
        standingCharge: Double, currency: Currency, hasConsumption: Bool, importPrice: Double?, exportPrice: Double?, dayStart: Date? = nil
    ) -> MoneyReport {
        MoneyReport(
            currency: currency, importCost: importCost, exportEarnings: exportEarnings, standingCharge: standingCharge,
            gridOnlyCost: hasConsumption ? gridOnlyCost + standingCharge : nil, unpricedKWh: unpricedKWh,
            importPricePerKWh: importPrice, exportPricePerKWh: exportPrice, dayStart: dayStart)
    }
}

/// The day's money as shown: the amounts, the standing charge accrued, and the prices now.
public struct MoneyReport: Sendable, Equatable {
    public var currency: Currency
    public var importCost: Double
    public var exportEarnings: Double
    /// The standing charge accrued through the local day so far (one day's at midnight).
    public var standingCharge: Double
    /// The consumption at the import prices in force, with the standing charge a home on the grid
    /// alone pays as well; nil for a widget without an output.
    public var gridOnlyCost: Double?
    public var unpricedKWh: [EnergyAccount: Double]
    /// The import and export price in force now (per kWh, fees and VAT in); nil when unknown or,
    /// for export, without an export price.
    public var importPricePerKWh: Double?
    public var exportPricePerKWh: Double?
    /// The first instant of the local day the amounts count from (nil when not known): a sensor
    /// of a day's amount tells Home Assistant by it that a new day began, since an amount may
    /// fall during a day too (a negative price) and a drop says nothing.
    public var dayStart: Date?

    public init(
        currency: Currency, importCost: Double, exportEarnings: Double, standingCharge: Double, gridOnlyCost: Double?,
        unpricedKWh: [EnergyAccount: Double] = [:], importPricePerKWh: Double? = nil, exportPricePerKWh: Double? = nil,
        dayStart: Date? = nil
    ) {
        self.currency = currency
        self.importCost = importCost
        self.exportEarnings = exportEarnings
        self.standingCharge = standingCharge
        self.gridOnlyCost = gridOnlyCost
        self.unpricedKWh = unpricedKWh
        self.importPricePerKWh = importPricePerKWh
        self.exportPricePerKWh = exportPricePerKWh
        self.dayStart = dayStart
    }

    /// Import cost − export earnings + standing charge: the day's bill.
    public var netCost: Double { importCost - exportEarnings + standingCharge }

    /// What the panels and the battery saved: the grid-only cost minus the net cost (the standing
    /// charge is in both, so it cancels). Nil without an output.
    public var saved: Double? { gridOnlyCost.map { $0 - netCost } }

    /// All unpriced energy, in kWh.
    public var unpricedTotalKWh: Double { unpricedKWh.values.reduce(0, +) }

    /// Unpriced energy below a Wh is not said (the texts show Wh).
    public static let unpricedShownKWh = 0.001

    /// Adds what energy of `account` counted late in the day (a counter's rise across midnight)
    /// cost or earned, and what of it had no price.
    mutating func add(_ amount: Double, unpricedKWh: Double, of account: EnergyAccount) {
        if unpricedKWh > 0 { self.unpricedKWh[account, default: 0] += unpricedKWh }
        switch account {
        case .imported: importCost += amount
        case .exported: exportEarnings += amount
        case .consumption: gridOnlyCost = gridOnlyCost.map { $0 + amount }
        default: break
        }
    }

    /// The unpriced energy worth saying, by account.
    public var shownUnpricedKWh: [EnergyAccount: Double] { unpricedKWh.filter { $0.value >= Self.unpricedShownKWh } }

    /// One line for people: `import €1.23, export −€0.45, standing €0.40, net €1.18, saved €2.80`.
    public var text: String {
        var parts = [
            "import \(currency.text(importCost))", "export \(currency.text(-exportEarnings))",
            "standing \(currency.text(standingCharge))", "net \(currency.text(netCost))",
        ]
        if let saved { parts.append("saved \(currency.text(saved))") }
        let unpriced = shownUnpricedKWh
        if !unpriced.isEmpty {
            let kWh = unpriced.keys.sorted().map { "\($0) \(AccountBalance.kWh(unpriced[$0]!)) kWh" }
            parts.append("unpriced \(kWh.joined(separator: ", "))")
        }
        return parts.joined(separator: ", ")
    }

    /// The amounts as a JSON object at full resolution (`replay --final`, the sensors).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(currency.code), "import_cost": .number(importCost), "export_earnings": .number(exportEarnings),
            "standing_charge": .number(standingCharge), "net_cost": .number(netCost),
        ]
        if let saved { members["saved"] = .number(saved) }
        if unpricedTotalKWh > 0 { members["unpriced_kwh"] = EnergyAccount.json(unpricedKWh) }
        return .object(members)
    }
}
