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
        board.widgets.first { $0.name == name }?.flow.map(Self.accounts(of:))
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
            let name = board.widgets[position].name
            var accounts: [EnergyAccount: Double] = [:]
            var byNode: [String: [EnergyAccount: Double]] = [:]
            for node in board.widgets[position].flow!.nodes.indices {
                let setup = board.widgets[position].flow!.nodes[node].setup
                for index in setup.accountKinds.indices {
                    let energy = board.widgets[position].flow!.nodes[node].accounts[index].closeDay(at: day.end, maxGapSeconds: setup.maxGapSeconds)
                    accounts[setup.accountKinds[index], default: 0] += energy
                    byNode[setup.place.description, default: [:]][setup.accountKinds[index]] = energy
                    if index == setup.shown { closed.totalsKWh["\(name)/\(setup.place)"] = energy }
                }
            }
            if !accounts.isEmpty {
                closed.accountsKWh[name] = accounts
                closed.nodeAccountsKWh[name] = byNode
            }
            if let range = board.widgets[position].flow!.levelRange { closed.levelRangePercent[name] = range }
            // The level at midnight is the new day's first.
            board.widgets[position].flow!.levelRange = board.widgets[position].flow!.levelSource.flatMap { bank.sources[$0].reading.map { $0.value...$0.value } }
            if let money = moneyReport(of: position, at: day.end) {
                closed.money[name] = money
                board.widgets[position].flow!.money = DayMoney()
            }
            // The new day's accounts start at 0: sensors hear so at once, even when the closed
            // day's were 0 too (a new day is news to a sensor that resets at midnight).
            board.widgets[position].flow!.accountsMoved = true
            board.widgets[position].flow!.balanceKWh = 0
            board.widgets[position].flow!.accountsSent = nil
        }
        pricing.unpricedSaid = []
        return closed
    }

    /// Counts every account's last rate up to `boundary` (midnight) and prices the stretch as the
    /// closing day's, before the day's last slot and the day close.
    mutating func carryAccounts(to boundary: Date, into out: inout [Output]) {
        for position in flowPositions {
            for node in board.widgets[position].flow!.nodes.indices {
                let setup = board.widgets[position].flow!.nodes[node].setup
                for index in setup.accountKinds.indices {
                    if let span = board.widgets[position].flow!.nodes[node].accounts[index].carry(to: boundary, maxGapSeconds: setup.maxGapSeconds) {
                        count(span, setup.accountKinds[index], at: setup.place, inWidget: position, into: &out)
                    }
                }
            }
        }
    }

    /// Widens widget `position`'s range of the day's battery level by a reading of `source`. The
    /// range is widened by the widget itself, in place, and the level read apart (`level(of:inWidget:)`):
    /// read here and written back, the range was read through a copy of the whole widget (its
    /// policy, its documents, its nodes: some 800 bytes and a retain and a release of each of
    /// their references), and the level through a copy of its source, at every reading of it.
    mutating func noteLevel(of source: Int, inWidget position: Int) {
        guard let level = level(of: source, inWidget: position) else { return }
        board.widgets[position].flow!.widenLevelRange(by: level)
    }

    /// The reading of `source` (%) when it is widget `position`'s level.
    func level(of source: Int, inWidget position: Int) -> Double? {
        source == board.widgets[position].flow!.levelSource ? bank.sources[source].reading?.value : nil
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
        guard handsOverAccounts else { return }
        let money = moneyReport(of: position, at: now)
        sendAccounts(of: position, at: now, money: money, ifMovedSince: board.widgets[position].flow!.accountsSentAt, into: &out)
    }

    /// On a tick: the accounts of every widget whose accounts moved (at Wh resolution) and whose
    /// last went out a minute ago or more, though its widget is not pushed (a long `min_interval`).
    mutating func sendMovedAccounts(at now: Date, into out: inout [Output]) {
        guard handsOverAccounts else { return }
        for position in flowPositions {
            guard let sentAt = movedAccountsSentAt(of: position), now.timeIntervalSince(sentAt) >= Self.accountsIntervalSeconds else { continue }
            sendAccounts(of: position, at: now, money: moneyReport(of: position, at: now), ifMovedSince: sentAt, into: &out)
        }
    }

    /// When widget `position`'s accounts last went out, if they moved since (the first push sends
    /// them: nil before it). Asked apart from the sending: bound in a mutating method, a field read
    /// through the widget's optional template copied the whole widget, at every message.
    func movedAccountsSentAt(of position: Int) -> Date? {
        board.widgets[position].flow!.accountsMoved ? board.widgets[position].flow!.accountsSentAt : nil
    }

    /// Hands over the accounts and `money` of widget `position`, unless they were sent before
    /// (`sentAt` not nil) and have not moved since at the sensors' resolution. The widget decides
    /// and marks them sent itself (`handOverAccounts`), in place: its fields read here between its
    /// writes were read through a copy of the whole widget, three times a push.
    private mutating func sendAccounts(of position: Int, at now: Date, money: MoneyReport?, ifMovedSince sentAt: Date?, into out: inout [Output]) {
        guard let accounts = board.widgets[position].flow!.handOverAccounts(at: now, roundedMoney: money.map(Self.rounded), ifMovedSince: sentAt) else {
            return
        }
        out.append(.accounts(widget: board.widgets[position].name, at: now, accounts, money: money))
    }

    /// When the accounts of a widget are next due without a push, if they moved; never while
    /// none go out (asked before every message).
    var accountsDeadline: Date? {
        guard handsOverAccounts else { return nil }
        var next: Date?
        for position in flowPositions {
            guard let sentAt = movedAccountsSentAt(of: position) else { continue }
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
}
