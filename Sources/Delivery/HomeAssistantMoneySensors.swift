import FlowCore

/// The sensors of a priced flow widget's day's money and prices: which figures there are, what
/// each is called, and where its value is in the engine's `MoneyReport`.
extension HomeAssistantSensor {
    /// The sensors of `widget`'s money with `tariff`; `label` (the widget's, when the config has
    /// several flow widgets) goes before their words.
    static func money(of widget: FlowWidgetConfig, tariff: TariffConfig, label: String) -> [HomeAssistantSensor] {
        MoneyFigure.allCases.filter { $0.applies(tariff, hasOutput: widget.output != nil) }.map { figure in
            HomeAssistantSensor(
                widget: widget.name, key: figure.key,
                name: label.isEmpty ? figure.words.prefix(1).uppercased() + figure.words.dropFirst() : label + figure.words,
                quantity: figure.quantity(tariff.currency), field: .money(figure), precision: figure.precision(tariff.currency))
        }
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

        /// What the sensor is called: `import cost today`.
        var words: String {
            switch self {
            case .importCost: "import cost today"
            case .exportEarnings: "export earnings today"
            case .netCost: "net cost today"
            case .saved: "saved today"
            case .importPrice: "import price"
            case .exportPrice: "export price"
            }
        }

        func quantity(_ currency: Currency) -> Quantity {
            switch self {
            case .importCost, .exportEarnings, .netCost, .saved: .moneyToday(currency)
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
