import FoundationEssentials

/// The widgets' share of the saved state (see `FlowEngine.snapshot`): every account of every flow
/// widget's nodes, the day's money, the open slot's bases, the battery's range and the derived
/// home's balance below 0; and how each is taken back, checked number by number.
extension FlowEngine.WidgetBoard {
    /// The flow widgets, the first of `widgets`.
    var flows: ArraySlice<FlowEngine.WidgetMachine> { widgets[..<flowCount] }

    /// `totals` (what the widgets show, as before accounts: an older release reads it back),
    /// `accounts` (every direction of every node), with a tariff (`currency`) `money`, and
    /// `level_range` and `balance_kwh` where a widget has them.
    func snapshot(currency: Currency?) -> [String: JSONValue] {
        var state: [String: JSONValue] = [:]
        var totals: [String: JSONValue] = [:]
        var accounts: [String: JSONValue] = [:]
        // A derived home's day is marked `balance`: it is the balance of the others, which a
        // restart rebuilds as it rebuilds theirs, so it needs no save of its own (`SavePolicy`).
        func saved(_ total: EnergyTotal, of node: FlowEngine.NodeState) -> JSONValue {
            guard node.isBalance, case .object(var members) = total.json else { return total.json }
            members["balance"] = true
            return .object(members)
        }
        var money: [String: JSONValue] = [:]
        var levels: [String: JSONValue] = [:]
        // The derived output's balance below its clamp at 0 (more counted out than in so far).
        var balances: [String: JSONValue] = [:]
        for widget in flows {
            let flow = widget.flow!
            for node in flow.nodes {
                if let total = node.total { totals["\(widget.name)/\(node.place)"] = saved(total, of: node) }
                for (kind, total) in zip(node.setup.accountKinds, node.accounts) {
                    accounts["\(widget.name)/\(node.place)/\(kind)"] = saved(total, of: node)
                }
            }
            if let currency, let day = flow.money { money[widget.name] = day.json(currency: currency) }
            if let range = flow.levelRange { levels[widget.name] = [.number(range.lowerBound), .number(range.upperBound)] }
            if flow.balanceNode != nil, flow.balanceKWh < 0 { balances[widget.name] = .number(flow.balanceKWh) }
        }
        state["totals"] = .object(totals)
        state["accounts"] = .object(accounts)
        if currency != nil { state["money"] = .object(money) }
        if !levels.isEmpty { state["level_range"] = .object(levels) }
        if !balances.isEmpty { state["balance_kwh"] = .object(balances) }
        return state
    }

    /// The open slot that began at `start`: the standing charge accrued then, and what each
    /// widget's accounts and money held then (keyed like `accounts`), so a restart neither loses
    /// the slot's energy so far nor counts it twice.
    func slotSnapshot(start: Date, currency: Currency?) -> JSONValue {
        var bases: [String: JSONValue] = [:]
        for widget in flows {
            let flow = widget.flow!
            var accounts: [String: JSONValue] = [:]
            var index = 0
            for node in flow.nodes {
                for kind in node.setup.accountKinds {
                    if index < flow.slotBase.accountsKWh.count {
                        accounts["\(node.place)/\(kind)"] = .number(flow.slotBase.accountsKWh[index])
                    }
                    index += 1
                }
            }
            var base: [String: JSONValue] = ["accounts": .object(accounts)]
            if let money = flow.slotBase.money, let currency { base["money"] = money.json(currency: currency) }
            bases[widget.name] = .object(base)
        }
        return .object([
            "start": .number(start.timeIntervalSince1970), "standing_charge": .number(flows.first?.flow!.slotBase.standingCharge ?? 0),
            "widgets": .object(bases),
        ])
    }

    /// Takes back every saved account of the nodes the config still has, of the same kind, with
    /// plausible numbers (no node sees more than `maxDayKWh` in a day, no time outside `times`);
    /// what is left out is said in `skipped`. A state written before accounts has only `totals`:
    /// each restores into the account it counted (by its kind); the node's other directions start
    /// from the restart.
    mutating func restoreAccounts(from state: JSONValue, maxDayKWh: Double, times: ClosedRange<Double>, into skipped: inout [Diagnostic]) {
        let savedTotals = state["totals"]?.objectValue ?? [:]
        let savedAccounts = state["accounts"]?.objectValue
        for position in 0..<flowCount {
            for node in widgets[position].flow!.nodes.indices {
                let state = widgets[position].flow!.nodes[node]
                let nodeKey = "\(widgets[position].name)/\(state.place)"
                for (index, kind) in state.setup.accountKinds.enumerated() {
                    let spec = state.accounts[index].spec
                    // The shown account is named as the node's total was before there were accounts.
                    let what = index == state.setup.shown ? "the total of \(nodeKey)" : "the \(kind) account of \(nodeKey)"
                    let value: JSONValue?
                    if let savedAccounts {
                        value = savedAccounts["\(nodeKey)/\(kind)"]
                    } else {
                        // The old total counted this account if its kind is this account's, or
                        // (another kind) it was the shown one, whose change the log names.
                        let old = savedTotals[nodeKey]
                        let matches = old?["kind"]?.stringValue == spec.description
                        value = matches || (index == state.setup.shown && !state.accounts.contains { old?["kind"]?.stringValue == $0.spec.description }) ? old : nil
                    }
                    guard let value else { continue }
                    switch EnergyTotal.restored(from: value, spec: spec, maxDayKWh: maxDayKWh, times: times) {
                    case .restored(let total): widgets[position].flow!.nodes[node].accounts[index] = total
                    case .otherKind(let saved):
                        skipped.append(Diagnostic(.info, "state: \(what) was saved as \(saved ?? "another kind"); as \(spec) it starts at 0"))
                    case .beyondADay(let energy):
                        skipped.append(Diagnostic(.warning, """
                            state: \(what), \(JSONValue.format(PatchPolicy.quantize(energy, step: 0.01))) kWh, is damaged: more than its sources' max_power \
                            allow in a day (\(JSONValue.format(maxDayKWh)) kWh); left out
                            """))
                    case .damaged: skipped.append(FlowEngine.damaged(what))
                    }
                }
            }
        }
    }

    /// Takes back each priced widget's saved money in `currency`: none beyond what the day's
    /// energy at the largest price could make; what is left out is said in `skipped`.
    ///
    /// Money that starts afresh in the middle of a day (none saved: a tariff new to the widget, by
    /// a restart or a reload; saved in another currency; damaged) has no price for the energy the
    /// day imported and exported before: it counts as unpriced, never as energy that cost nothing.
    mutating func restoreMoney(from state: JSONValue, currency: Currency, maxDayKWh: Double, into skipped: inout [Diagnostic]) {
        let maxAmount = maxDayKWh * TariffConfig.largestPricePerKWh
        for position in 0..<flowCount where widgets[position].flow!.money != nil {
            let name = widgets[position].name
            let why: String
            switch state["money"]?[name].map({ DayMoney.restored(from: $0, currency: currency, maxAmount: maxAmount, maxDayKWh: maxDayKWh) }) {
            case .restored(let money):
                widgets[position].flow!.money = money
                continue
            case .otherCurrency(let code): why = "the money of '\(name)' was counted in \(code); in \(currency) it starts afresh"
            case .damaged:
                skipped.append(FlowEngine.damaged("the money of '\(name)'"))
                why = "the money of '\(name)' starts afresh"
            case nil: why = "no money of '\(name)' was saved (a tariff new to it)"
            }
            let counted = widgets[position].flow!.nodes.first { $0.place == .exchange }?.accountsKWh ?? [:]
            let unpriced = [EnergyAccount.imported, .exported].compactMap { account in counted[account].flatMap { $0 > 0 ? (account, $0) : nil } }
            widgets[position].flow!.money = DayMoney(unpricedKWh: Dictionary(uniqueKeysWithValues: unpriced))
            let energy = unpriced.map { "\(AccountBalance.kWh($0.1)) kWh \($0.0 == .imported ? "imported" : "exported")" }
            guard !energy.isEmpty || state["money"]?[name] != nil else { continue }
            skipped.append(Diagnostic(.info, "state: \(why)\(energy.isEmpty ? "" : "; the \(energy.joined(separator: " and ")) before count unpriced")"))
        }
    }

    /// Takes back the derived home's balance and the day's battery ranges, once the accounts are
    /// restored.
    mutating func restoreBalances(from state: JSONValue, maxDayKWh: Double) {
        for position in 0..<flowCount {
            guard let node = widgets[position].flow!.balanceNode else { continue }
            // The derived output's day goes on from what it showed, or from the balance below 0
            // that it showed as 0.
            let shown = widgets[position].flow!.nodes[node].accounts.first?.energyKWh ?? 0
            let saved = state["balance_kwh"]?[widgets[position].name]?.numberValue
            widgets[position].flow!.balanceKWh = shown == 0 ? min(0, max(saved ?? 0, -maxDayKWh)) : shown
        }
        for position in 0..<flowCount {
            guard let saved = state["level_range"]?[widgets[position].name]?.arrayValue, saved.count == 2,
                let low = saved[0].numberValue, let high = saved[1].numberValue, 0 <= low, low <= high, high <= 100
            else { continue }
            widgets[position].flow!.levelRange = low...high
        }
    }

    /// Takes back each widget's base of the saved open `slot` (see `slotSnapshot`), `standing`
    /// the standing charge accrued when it began: a base above what its account holds now is no
    /// base of this slot, and the account's energy now is.
    mutating func restoreSlotBases(from slot: JSONValue, standing: Double, currency: Currency?, maxDayKWh: Double) {
        let maxAmount = maxDayKWh * TariffConfig.largestPricePerKWh
        for position in 0..<flowCount {
            let saved = slot["widgets"]?[widgets[position].name]
            var base = SlotBase(accountsKWh: [], money: widgets[position].flow!.money, standingCharge: standing)
            for node in widgets[position].flow!.nodes {
                for (kind, total) in zip(node.setup.accountKinds, node.accounts) {
                    let value = saved?["accounts"]?["\(node.place)/\(kind)"]?.numberValue
                    base.accountsKWh.append(value.flatMap { 0 <= $0 && $0 <= total.energyKWh ? $0 : nil } ?? total.energyKWh)
                }
            }
            if let currency, let money = saved?["money"],
                case .restored(let restored) = DayMoney.restored(from: money, currency: currency, maxAmount: maxAmount, maxDayKWh: maxDayKWh)
            {
                base.money = restored
            }
            widgets[position].flow!.slotBase = base
        }
    }
}
