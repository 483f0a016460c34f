import FoundationEssentials

/// Every account and the money of each flow widget since flowbridge first counted it: the sum of
/// the closed days, to which today's figures add. What a lifetime counter (`/metrics`) is made
/// of: it only rises, across restarts (kept in the state) and midnights (a closed day is added
/// once, by its date), so a Prometheus `rate()` or `increase()` over it is right.
public struct LifetimeAccounts: Sendable, Equatable {
    /// The closed days' money of one widget, in the currency it was counted in.
    public struct Money: Sendable, Equatable {
        public var currencyCode: String
        public var importCost = 0.0
        public var exportEarnings = 0.0
        public var standingCharge = 0.0

        public init(currencyCode: String) { self.currencyCode = currencyCode }

        /// The closed days' and today's (`today`) money, when both are in one currency.
        public func adding(_ today: MoneyReport?) -> Money {
            guard let today, today.currency.code == currencyCode else { return self }
            var sum = self
            sum.importCost += today.importCost
            sum.exportEarnings += today.exportEarnings
            sum.standingCharge += today.standingCharge
            return sum
        }
    }

    /// By widget: each account's energy of the closed days (kWh).
    public private(set) var closedKWh: [String: [EnergyAccount: Double]] = [:]
    /// By widget: the closed days' money.
    public private(set) var closedMoney: [String: Money] = [:]
    /// The last day added: a day is added once, however often it is offered.
    public private(set) var throughDay: CivilDate?

    public init() {}

    /// The sums of closed days counted elsewhere (the day book's), through `throughDay`.
    public init(throughDay: CivilDate?, closedKWh: [String: [EnergyAccount: Double]], closedMoney: [String: Money]) {
        self.throughDay = throughDay
        self.closedKWh = closedKWh
        self.closedMoney = closedMoney
    }

    /// The last day added as it was added: the same day offered again, amended (a counter's rise
    /// across midnight counted after it closed), adds what it gained. Not saved: a restart keeps no
    /// closed day to amend.
    private var lastAdded: FlowEngine.ClosedDay?

    /// Equal when they count the same: the last day as added is no part of the count.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.closedKWh == rhs.closedKWh && lhs.closedMoney == rhs.closedMoney && lhs.throughDay == rhs.throughDay
    }

    /// Adds a closed day, unless it (or a later one) was added before; the last day offered again
    /// with other figures adds the difference. True when anything was added.
    @discardableResult
    public mutating func add(_ day: FlowEngine.ClosedDay) -> Bool {
        if let throughDay, day.date < throughDay || (day.date == throughDay && lastAdded.map { $0 == day || $0.date != day.date } ?? true) {
            return false
        }
        let before = day.date == throughDay ? lastAdded : nil
        throughDay = day.date
        lastAdded = day
        for (widget, accounts) in day.accountsKWh {
            for (account, energy) in accounts where energy.isFinite {
                let added = energy - (before?.accountsKWh[widget]?[account] ?? 0)
                closedKWh[widget, default: [:]][account] = max(0, (closedKWh[widget]?[account] ?? 0) + added)
            }
        }
        for (widget, money) in day.money {
            // Another currency starts the count again: amounts in two currencies do not add.
            var sum = closedMoney[widget].flatMap { $0.currencyCode == money.currency.code ? $0 : nil } ?? Money(currencyCode: money.currency.code)
            let earlier = before?.money[widget].flatMap { $0.currency == money.currency ? $0 : nil }
            sum.importCost += money.importCost - (earlier?.importCost ?? 0)
            sum.exportEarnings += money.exportEarnings - (earlier?.exportEarnings ?? 0)
            sum.standingCharge += money.standingCharge - (earlier?.standingCharge ?? 0)
            closedMoney[widget] = sum
        }
        return true
    }

    /// The highest lifetime energy served as a counter, by widget and account. Not saved.
    private var servedKWh: [String: [EnergyAccount: Double]] = [:]

    /// The lifetime energy of widget `widget`'s accounts as counters (`/metrics`, which a scraper
    /// takes any fall of for a reset): `totalKWh`, never below what was served before. A derived
    /// home's day falls back by a meter's export or charge counted after the others of its moment,
    /// and the counter holds until the day is back above it.
    public mutating func counterKWh(of widget: String, today: [EnergyAccount: Double]) -> [EnergyAccount: Double] {
        var total = totalKWh(of: widget, today: today)
        for (account, energy) in total {
            let served = max(energy, servedKWh[widget]?[account] ?? 0)
            total[account] = served
            servedKWh[widget, default: [:]][account] = served
        }
        return total
    }

    /// The lifetime energy of widget `widget`'s accounts: the closed days' and `today`'s (kWh).
    public func totalKWh(of widget: String, today: [EnergyAccount: Double]) -> [EnergyAccount: Double] {
        var total = closedKWh[widget] ?? [:]
        for (account, energy) in today where energy.isFinite && energy >= 0 { total[account, default: 0] += energy }
        return total
    }

    /// The lifetime money of widget `widget` with `today`'s; nil while it has none.
    public func money(of widget: String, today: MoneyReport?) -> Money? {
        if let closed = closedMoney[widget] { return closed.adding(today) }
        return today.map { Money(currencyCode: $0.currency.code).adding($0) }
    }

    // MARK: - In the state

    /// `{"through": "2026-12-05", "kwh": {widget: {account: kWh}}, "money": {widget: {...}}}`.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "kwh": .object(closedKWh.mapValues { accounts in .object(Dictionary(uniqueKeysWithValues: accounts.map { ($0.key.rawValue, .number($0.value)) })) }),
            "money": .object(closedMoney.mapValues { money in
                .object([
                    "currency": .string(money.currencyCode), "import_cost": .number(money.importCost),
                    "export_earnings": .number(money.exportEarnings), "standing_charge": .number(money.standingCharge),
                ])
            }),
        ]
        if let throughDay { members["through"] = .string(throughDay.description) }
        return .object(members)
    }

    /// Takes back what `json` wrote; what is not a number or not an account is left out.
    public init(json: JSONValue) {
        throughDay = json["through"]?.stringValue.flatMap(CivilDate.init)
        for (widget, accounts) in json["kwh"]?.objectValue ?? [:] {
            for (key, value) in accounts.objectValue ?? [:] {
                guard let account = EnergyAccount(rawValue: key), let energy = value.numberValue, energy.isFinite, energy >= 0 else { continue }
                closedKWh[widget, default: [:]][account] = energy
            }
        }
        for (widget, money) in json["money"]?.objectValue ?? [:] {
            guard let code = money["currency"]?.stringValue else { continue }
            var sum = Money(currencyCode: code)
            sum.importCost = money["import_cost"]?.numberValue ?? 0
            sum.exportEarnings = money["export_earnings"]?.numberValue ?? 0
            sum.standingCharge = money["standing_charge"]?.numberValue ?? 0
            closedMoney[widget] = sum
        }
    }
}
