import FoundationEssentials

/// The day's accounts: every direction of every node, closed at midnight with a line that says
/// whether they add up, and handed out (`.accounts`) for sensors that must not wait for a quiet
/// widget's next push.
extension FlowEngine {
    /// Each node's accounts, in kWh at full resolution, by the widget's nodes.
    public typealias NodeAccounts = [NodePlace: [EnergyAccount: Double]]

    /// At most this long between two `.accounts` outputs of a widget while an account moves: Home
    /// Assistant's statistics take a sample per 5 minutes, and its Energy dashboard's hourly bars
    /// are off by whatever a late update misses.
    public static let accountsIntervalSeconds = 60.0

    /// The accounts of flow widget `name` now, by node; nil for a name that is no flow widget.
    public func accounts(ofWidget name: String) -> NodeAccounts? {
        widgets.first { $0.config.name == name }.map(Self.accounts(of:))
    }

    /// The accounts of flow widget `name` summed by direction (two inputs: one production).
    public func accountTotals(ofWidget name: String) -> [EnergyAccount: Double]? {
        accounts(ofWidget: name).map(Self.summed)
    }

    static func accounts(of widget: WidgetState) -> NodeAccounts {
        Dictionary(uniqueKeysWithValues: widget.nodes.map { ($0.place, $0.accountsKWh) })
    }

    public static func summed(_ accounts: NodeAccounts) -> [EnergyAccount: Double] {
        accounts.values.reduce(into: [:]) { sum, node in
            for (account, energy) in node { sum[account, default: 0] += energy }
        }
    }

    /// Closes every account of every node at `day`'s end. The closed day keeps the shown totals
    /// (by `widget/node`) and each widget's accounts.
    mutating func closeDay(_ day: LocalDay, into out: inout [Output]) -> ClosedDay {
        var closed = ClosedDay(date: day.date, totalsKWh: [:], accountsKWh: [:])
        for position in widgets.indices {
            var accounts: [EnergyAccount: Double] = [:]
            for node in widgets[position].nodes.indices {
                let state = widgets[position].nodes[node]
                for index in state.accounts.indices {
                    // The stretch up to midnight is priced as the day's, before the day closes.
                    if let span = widgets[position].nodes[node].accounts[index].carry(to: day.end, maxGapSeconds: state.maxGapSeconds) {
                        price(span, state.setup.accountKinds[index], at: state.place, inWidget: position, into: &out)
                    }
                    let energy = widgets[position].nodes[node].accounts[index].closeDay(at: day.end, maxGapSeconds: state.maxGapSeconds)
                    accounts[state.setup.accountKinds[index], default: 0] += energy
                    if index == state.setup.shown { closed.totalsKWh["\(widgets[position].config.name)/\(state.place)"] = energy }
                }
            }
            if !accounts.isEmpty { closed.accountsKWh[widgets[position].config.name] = accounts }
            if let money = moneyReport(of: position, at: day.end) {
                closed.money[widgets[position].config.name] = money
                widgets[position].money = DayMoney()
            }
            // The new day's accounts start at 0: sensors hear so at once.
            widgets[position].accountsMoved = true
        }
        unpricedSaid = []
        return closed
    }

    /// The closed day's accounts, one line per flow widget; a warning when supply and use disagree
    /// by more than `AccountBalance.toleratedGapShare` of the day's consumption.
    func reportAccounts(of closed: ClosedDay, into out: inout [Output]) {
        for name in closed.accountsKWh.keys.sorted() {
            let balance = AccountBalance(accountsKWh: closed.accountsKWh[name]!)
            out.append(.diagnostic(Diagnostic(balance.isOff ? .warning : .info, "day \(closed.date) widget '\(name)' accounts: \(balance.text)")))
        }
        for name in closed.money.keys.sorted() {
            out.append(.diagnostic(Diagnostic(.info, "day \(closed.date) widget '\(name)' money: \(closed.money[name]!.text)")))
        }
    }

    /// After a push of widget `position`: its accounts go out with it.
    mutating func sendAccounts(of position: Int, at now: Date, into out: inout [Output]) {
        let accounts = Self.accounts(of: widgets[position])
        let money = moneyReport(of: position, at: now)
        widgets[position].accountsSentAt = now
        widgets[position].accountsMoved = false
        widgets[position].accountsSent = Self.rounded(accounts)
        widgets[position].moneySent = money.map(Self.rounded)
        out.append(.accounts(widget: widgets[position].config.name, at: now, accounts, money: money))
    }

    /// On a tick: the accounts of every widget whose accounts moved (at Wh resolution) and whose
    /// last went out a minute ago or more, though its widget is not pushed (a long `min_interval`).
    mutating func sendMovedAccounts(at now: Date, into out: inout [Output]) {
        for position in widgets.indices where widgets[position].accountsMoved {
            guard let sentAt = widgets[position].accountsSentAt else { continue }  // the first push sends them
            guard now.timeIntervalSince(sentAt) >= Self.accountsIntervalSeconds else { continue }
            if Self.rounded(Self.accounts(of: widgets[position])) == widgets[position].accountsSent,
                moneyReport(of: position, at: now).map(Self.rounded) == widgets[position].moneySent
            {
                widgets[position].accountsMoved = false
                continue
            }
            sendAccounts(of: position, at: now, into: &out)
        }
    }

    /// When the accounts of a widget are next due without a push, if they moved.
    var accountsDeadline: Date? {
        var next: Date?
        for position in widgets.indices where widgets[position].accountsMoved {
            guard let sentAt = widgets[position].accountsSentAt else { continue }
            let due = sentAt.addingTimeInterval(Self.accountsIntervalSeconds)
            if next.map({ due < $0 }) ?? true { next = due }
        }
        return next
    }

    /// A ten-thousandth of the currency, and the prices: what the money's sensors carry. The
    /// standing charge moves it while no energy does (a quiet night), the prices at a new slot.
    static func rounded(_ money: MoneyReport) -> [Double?] {
        [money.importCost, money.exportEarnings, money.netCost, money.saved].map { $0.map { PatchPolicy.quantize($0, step: 0.0001) } }
            + [money.importPricePerKWh, money.exportPricePerKWh]
    }

    /// Wh resolution: what the sensors carry, and so what counts as a move.
    static func rounded(_ accounts: NodeAccounts) -> NodeAccounts {
        accounts.mapValues { $0.mapValues { PatchPolicy.quantize($0, step: 0.001) } }
    }
}
