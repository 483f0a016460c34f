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
        widgets.first { $0.name == name }?.flow.map(Self.accounts(of:))
    }

    /// The accounts of flow widget `name` summed by direction (two inputs: one production).
    public func accountTotals(ofWidget name: String) -> [EnergyAccount: Double]? {
        accounts(ofWidget: name).map(Self.summed)
    }

    static func accounts(of widget: FlowWidget) -> NodeAccounts {
        Dictionary(uniqueKeysWithValues: widget.nodes.map { ($0.place, $0.accountsKWh) })
    }

    public static func summed(_ accounts: NodeAccounts) -> [EnergyAccount: Double] {
        accounts.values.reduce(into: [:]) { sum, node in
            for (account, energy) in node { sum[account, default: 0] += energy }
        }
    }

    /// Closes every account of every node at `day`'s end, and the day's last slot. The closed day
    /// keeps the shown totals (by `widget/node`), each widget's accounts by node and summed, its
    /// money and its battery's range.
    mutating func closeDay(_ day: LocalDay, into out: inout [Output]) -> ClosedDay {
        carryAccounts(to: day.end, into: &out)
        dayClock.lastDaySlots = closeSlot(at: day.end, in: day, into: &out)
        var closed = ClosedDay(date: day.date, totalsKWh: [:], accountsKWh: [:])
        closed.hours = day.end.timeIntervalSince(day.start) / 3600
        for position in flowPositions {
            let name = widgets[position].name
            var accounts: [EnergyAccount: Double] = [:]
            var byNode: [String: [EnergyAccount: Double]] = [:]
            for node in widgets[position].flow!.nodes.indices {
                let setup = widgets[position].flow!.nodes[node].setup
                for index in setup.accountKinds.indices {
                    let energy = widgets[position].flow!.nodes[node].accounts[index].closeDay(at: day.end, maxGapSeconds: setup.maxGapSeconds)
                    accounts[setup.accountKinds[index], default: 0] += energy
                    byNode[setup.place.description, default: [:]][setup.accountKinds[index]] = energy
                    if index == setup.shown { closed.totalsKWh["\(name)/\(setup.place)"] = energy }
                }
            }
            if !accounts.isEmpty {
                closed.accountsKWh[name] = accounts
                closed.nodeAccountsKWh[name] = byNode
            }
            if let range = widgets[position].flow!.levelRange { closed.levelRangePercent[name] = range }
            // The level at midnight is the new day's first.
            widgets[position].flow!.levelRange = widgets[position].flow!.levelSource.flatMap { bank.sources[$0].reading.map { $0.value...$0.value } }
            if let money = moneyReport(of: position, at: day.end) {
                closed.money[name] = money
                widgets[position].flow!.money = DayMoney()
            }
            // The new day's accounts start at 0: sensors hear so at once, even when the closed
            // day's were 0 too (a new day is news to a sensor that resets at midnight).
            widgets[position].flow!.accountsMoved = true
            widgets[position].flow!.balanceKWh = 0
            widgets[position].flow!.accountsSent = nil
        }
        pricing.unpricedSaid = []
        return closed
    }

    /// Counts every account's last rate up to `boundary` (midnight) and prices the stretch as the
    /// closing day's, before the day's last slot and the day close.
    mutating func carryAccounts(to boundary: Date, into out: inout [Output]) {
        for position in flowPositions {
            for node in widgets[position].flow!.nodes.indices {
                let setup = widgets[position].flow!.nodes[node].setup
                for index in setup.accountKinds.indices {
                    if let span = widgets[position].flow!.nodes[node].accounts[index].carry(to: boundary, maxGapSeconds: setup.maxGapSeconds) {
                        count(span, setup.accountKinds[index], at: setup.place, inWidget: position, into: &out)
                    }
                }
            }
        }
    }

    /// Widens widget `position`'s range of the day's battery level by a reading of `source`.
    mutating func noteLevel(of source: Int, inWidget position: Int) {
        guard source == widgets[position].flow!.levelSource, let level = bank.sources[source].reading?.value else { return }
        let range = widgets[position].flow!.levelRange
        widgets[position].flow!.levelRange = min(range?.lowerBound ?? level, level)...max(range?.upperBound ?? level, level)
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

    /// After a push of widget `position`: its accounts go out with it when they moved at the
    /// resolution the sensors carry (a Wh, a ten-thousandth of the currency) or were never sent.
    /// A push at every reading would otherwise build and hand over the same accounts each time.
    mutating func sendAccounts(of position: Int, at now: Date, into out: inout [Output]) {
        let money = moneyReport(of: position, at: now)
        sendAccounts(of: position, at: now, money: money, ifMovedSince: widgets[position].flow!.accountsSentAt, into: &out)
    }

    /// On a tick: the accounts of every widget whose accounts moved (at Wh resolution) and whose
    /// last went out a minute ago or more, though its widget is not pushed (a long `min_interval`).
    mutating func sendMovedAccounts(at now: Date, into out: inout [Output]) {
        for position in flowPositions where widgets[position].flow!.accountsMoved {
            guard let sentAt = widgets[position].flow!.accountsSentAt else { continue }  // the first push sends them
            guard now.timeIntervalSince(sentAt) >= Self.accountsIntervalSeconds else { continue }
            sendAccounts(of: position, at: now, money: moneyReport(of: position, at: now), ifMovedSince: sentAt, into: &out)
        }
    }

    /// Hands over the accounts and `money` of widget `position`, unless they were sent before
    /// (`sentAt` not nil) and have not moved since at the sensors' resolution.
    private mutating func sendAccounts(of position: Int, at now: Date, money: MoneyReport?, ifMovedSince sentAt: Date?, into out: inout [Output]) {
        let roundedMoney = money.map(Self.rounded)
        widgets[position].flow!.accountsMoved = false
        if sentAt != nil, !accountsMovedSinceSent(of: position), roundedMoney == widgets[position].flow!.moneySent { return }
        widgets[position].flow!.accountsSentAt = now
        widgets[position].flow!.accountsSent = roundedAccountsKWh(of: position)
        widgets[position].flow!.moneySent = roundedMoney
        out.append(.accounts(widget: widgets[position].name, at: now, Self.accounts(of: widgets[position].flow!), money: money))
    }

    /// When the accounts of a widget are next due without a push, if they moved.
    var accountsDeadline: Date? {
        var next: Date?
        for position in flowPositions where widgets[position].flow!.accountsMoved {
            guard let sentAt = widgets[position].flow!.accountsSentAt else { continue }
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

    /// Every account of widget `position` at Wh resolution, node by node: what the sensors carry,
    /// and so what counts as a move.
    func roundedAccountsKWh(of position: Int) -> [Double] {
        widgets[position].flow!.nodes.flatMap { node in node.accounts.map(Self.shownKWh) }
    }

    /// Whether an account of widget `position` moved at Wh resolution since its accounts last went
    /// out (or they never did): `roundedAccountsKWh` compared in place, as it is asked after every push.
    func accountsMovedSinceSent(of position: Int) -> Bool {
        guard let sent = widgets[position].flow!.accountsSent else { return true }
        var index = 0
        for node in widgets[position].flow!.nodes.indices {
            for account in widgets[position].flow!.nodes[node].accounts.indices {
                guard index < sent.count, sent[index] == Self.shownKWh(widgets[position].flow!.nodes[node].accounts[account]) else { return true }
                index += 1
            }
        }
        return index != sent.count
    }

    /// An account's energy at the Wh the sensors show.
    private static func shownKWh(_ account: EnergyTotal) -> Double { PatchPolicy.quantize(account.energyKWh, step: 0.001) }
}
