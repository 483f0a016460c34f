import FoundationEssentials

/// A lifetime counter silent across midnight (an hourly bridge, a P1 reader at a slow interval)
/// rises by what flowed on both days, and the rise is known only when its next reading comes,
/// after the closed day went out. Its money is already spread over the time the rise covers; its
/// energy must be too, or the new day gets the old day's evening and the book keeps a day short.
///
/// One rule: the share of the rise before midnight (spread evenly over its time, as the money
/// spreads it) goes to the closed day, and the closed day goes out again, amended, with its last
/// slot, so the book's row and its slots still add up. Where the widget derives its home, the
/// home's closed day moves with it, as it would have had the reading come before midnight.
/// Only the day just closed is amended: a rise that began before it, or one after a restart
/// (which keeps no closed day), counts in the new day, as it always did.
extension FlowEngine {
    /// Splits `span`, what account `account` of node `node` (in widget `position`) just counted
    /// from a counter, at the current day's start: amends the closed day with the share before it
    /// and returns the share of the current day (nil when nothing is left of it).
    mutating func splitAtMidnight(
        _ span: EnergySpan, account: Int, ofNode node: Int, inWidget position: Int, into out: inout [Output]
    ) -> EnergySpan? {
        guard let day, span.start < day.start, var closed = lastClosedDay, let closedDay = zone.day(on: closed.date),
            closedDay.end == day.start, span.start >= closedDay.start,
            board.widgets[position].flow!.nodes[node].accounts[account].counter?.restartsFromZero == false,
            let slotIndex = dayClock.lastDaySlots.firstIndex(where: { $0.widget == board.widgets[position].name })
        else { return span }
        var before = span
        before.end = day.start
        before.energyKWh = span.energyKWh(from: span.start, to: day.start)
        guard before.energyKWh > 0 else { return span }
        var after = span
        after.start = day.start
        after.energyKWh = span.energyKWh - before.energyKWh
        board.widgets[position].flow!.nodes[node].accounts[account].handBack(before.energyKWh)

        let setup = board.widgets[position].flow!.nodes[node].setup
        let kind = setup.accountKinds[account]
        var slot = dayClock.lastDaySlots[slotIndex]
        amend(&closed, &slot, inWidget: position, node: node, account: account, by: before)
        if setup.place != .output, let home = board.widgets[position].flow!.countedBalanceNode {
            // The derived home's closed day moves as `count` moves today's: supply adds, use takes
            // away, never below 0.
            let shown = closed.nodeAccountsKWh[board.widgets[position].name]?[NodePlace.output.description]?[.consumption] ?? 0
            var moved = before
            moved.energyKWh = max(0, shown + (kind.isSupply ? before.energyKWh : -before.energyKWh)) - shown
            if moved.energyKWh != 0 { amend(&closed, &slot, inWidget: position, node: home, account: 0, by: moved) }
        }
        dayClock.lastDaySlots[slotIndex] = slot
        lastClosedDay = closed
        out.append(.closedSlot(slot))
        out.append(.closedDay(closed))
        // Said where the counter was silent for a slot or more before midnight: a counter that
        // reports every minute amends every day by its last minute, which is no news.
        guard day.start.timeIntervalSince(span.start) >= ClosedSlot.seconds else { return after.energyKWh > 0 ? after : nil }
        let counter = setup.counters[account].map { bank.sources[$0].config.name } ?? "?"
        let kWh = AccountBalance.kWh
        out.append(.diagnostic(Diagnostic(
            .info,
            "day \(closed.date) widget '\(slot.widget)': counter '\(counter)' rose \(kWh(span.energyKWh)) kWh from \(zone.clockText(at: span.start, today: span.end)) to \(zone.clockText(at: span.end, today: span.end)); the \(kWh(before.energyKWh)) kWh that flowed before midnight are added to \(closed.date)")))
        return after.energyKWh > 0 ? after : nil
    }

    /// Adds `part`, what account `account` of node `node` (in widget `position`) counted before
    /// midnight, to the closed day and its last slot: the energy, the shown total, and the money
    /// at the prices in force while it flowed.
    func amend(_ closed: inout ClosedDay, _ slot: inout ClosedSlot, inWidget position: Int, node: Int, account: Int, by part: EnergySpan) {
        let name = board.widgets[position].name
        let setup = board.widgets[position].flow!.nodes[node].setup
        let kind = setup.accountKinds[account]
        let place = setup.place.description
        closed.accountsKWh[name]?[kind, default: 0] += part.energyKWh
        closed.nodeAccountsKWh[name]?[place]?[kind, default: 0] += part.energyKWh
        if setup.shown == account { closed.totalsKWh["\(name)/\(place)", default: 0] += part.energyKWh }
        slot.energyKWh[place]?[kind, default: 0] += part.energyKWh
        guard let (_, byExportPrice) = Self.pricing(of: kind, at: setup.place), let (amount, unpricedKWh) = priced(part, byExportPrice: byExportPrice)
        else { return }
        closed.money[name]?.add(amount, unpricedKWh: unpricedKWh, of: kind)
        slot.money?.add(amount, unpricedKWh: unpricedKWh, of: kind, exchangeKWh: slot.energyKWh[NodePlace.exchange.description] ?? [:])
    }
}
