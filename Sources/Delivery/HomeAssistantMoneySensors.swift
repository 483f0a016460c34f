import FlowCore

/// The sensors of a priced flow widget's money (of the day, the month, the billing month) and
/// prices, and of each flow widget's lifetime accounts: which figures there are, what each is
/// called, and where its value is in the engine's `MoneyReport`.
extension HomeAssistantSensor {
    /// The sensors of `widget`'s money of `period` with `tariff`; `label` (the widget's, when the
    /// config has several flow widgets) goes before their words. A month has its amounts (import
    /// cost, export earnings, net cost); its saved and the prices are the day's alone.
    static func money(of widget: FlowWidgetConfig, tariff: TariffConfig, period: MoneyPeriod, label: String) -> [HomeAssistantSensor] {
        MoneyFigure.allCases.filter { $0.applies(tariff, hasOutput: widget.output != nil) && (period == .day || $0.isPeriodAmount) }.map { figure in
            let words = period == .day ? figure.words : "\(figure.amountWords) \(period.words)"
            return HomeAssistantSensor(
                widget: widget.name, key: period == .day ? figure.key : "\(figure.key)_\(period.rawValue)", name: titled(label, words),
                quantity: figure.quantity(tariff.currency, period), field: .money(figure, period), precision: figure.precision(tariff.currency))
        }
    }

    /// The lifetime sensors of `widget`: one per account its nodes count, in the order of
    /// `EnergyAccount`, each the widget's whole account (two inputs: one production). Not a
    /// derived home's consumption (`rate: balance`): it is the balance of the other accounts,
    /// which steps back when the meters report at different moments, and a `total_increasing`
    /// sensor must never fall (the Energy dashboard reckons the home's use from the others).
    static func lifetime(of widget: FlowWidgetConfig, label: String) -> [HomeAssistantSensor] {
        let measured = widget.nodes.filter { !HomeAssistantDiscovery.isDerived($0.node) }
        let counted = Set(measured.flatMap { place, node in node.accountTotals(in: place.slot).map(\.0) })
        return EnergyAccount.allCases.filter(counted.contains).map { account in
            HomeAssistantSensor(
                widget: widget.name, key: "lifetime_\(account.rawValue)", name: titled(label, "lifetime \(HomeAssistantDiscovery.accountWords(account))"),
                quantity: .energyLifetime, field: .lifetime(account), precision: HomeAssistantDiscovery.accountDecimals)
        }
    }

    /// `words` after the widget's `label` (several flow widgets), else capitalized.
    static func titled(_ label: String, _ words: String) -> String {
        label.isEmpty ? words.prefix(1).uppercased() + words.dropFirst() : label + words
    }

    /// One figure of a flow widget's day's money (`MoneyReport`).
    public enum MoneyFigure: Sendable, Equatable, CaseIterable {
        case importCost, exportEarnings, netCost, saved, importPrice, exportPrice

        /// The sensor's key: `import_cost`; no node's sensor ends like these.
        var key: String {
            switch self {
            case .importCost: "import_cost"
            case .exportEarnings: "export_earnings"
            case .netCost: "net_cost"
            case .saved: "saved"
            case .importPrice: "import_price"
            case .exportPrice: "export_price"
            }
        }

        /// Whether it is an amount that adds up over days (a month's sum means something).
        var isPeriodAmount: Bool {
            switch self {
            case .importCost, .exportEarnings, .netCost: true
            case .saved, .importPrice, .exportPrice: false
            }
        }

        /// What an amount is called before its period's words: `import cost`.
        var amountWords: String {
            switch self {
            case .importCost: "import cost"
            case .exportEarnings: "export earnings"
            case .netCost: "net cost"
            case .saved: "saved"
            case .importPrice: "import price"
            case .exportPrice: "export price"
            }
        }

        /// What the sensor is called: `import cost today`, `import price`.
        var words: String {
            switch self {
            case .importPrice, .exportPrice: amountWords
            case .importCost, .exportEarnings, .netCost, .saved: "\(amountWords) today"
            }
        }

        func quantity(_ currency: Currency, _ period: MoneyPeriod) -> Quantity {
            switch self {
            case .importCost, .exportEarnings, .netCost, .saved: .money(currency, period)
            case .importPrice, .exportPrice: .pricePerKWh(currency)
            }
        }

        /// Decimals Home Assistant shows: the currency's for an amount, a tenth of a cent for a
        /// price (as `check` shows it). The value has more (`HomeAssistantDiscovery.moneyStep`).
        func precision(_ currency: Currency) -> Int {
            switch self {
            case .importCost, .exportEarnings, .netCost, .saved: currency.decimals
            case .importPrice, .exportPrice: 3
            }
        }

        /// Whether a widget priced by `tariff` has it: export's only with an export price (without
        /// one the earnings can only be 0 and the price is none), saved only with an output (the
        /// consumption it is reckoned from).
        func applies(_ tariff: TariffConfig, hasOutput: Bool) -> Bool {
            switch self {
            case .importCost, .netCost, .importPrice: true
            case .exportEarnings, .exportPrice: tariff.exportPrice != nil
            case .saved: hasOutput
            }
        }

        /// The figure in `report`; nil when unknown (a price source silent, no output to save on).
        public func value(in report: MoneyReport) -> Double? {
            switch self {
            case .importCost: report.importCost
            case .exportEarnings: report.exportEarnings
            case .netCost: report.netCost
            case .saved: report.saved
            case .importPrice: report.importPricePerKWh
            case .exportPrice: report.exportPricePerKWh
            }
        }
    }
}
