import FoundationEssentials

/// The engine's open 15-minute slot: one for every widget, since slots are aligned on UTC.
struct OpenSlot: Sendable, Equatable {
    var start: Date
    /// Where it closes: the next multiple of `ClosedSlot.seconds` (midnight, where a day closes
    /// inside a slot, closes it earlier).
    let end: Date

    init(start: Date) {
        self.start = start
        end = ClosedSlot.start(of: start).addingTimeInterval(ClosedSlot.seconds)
    }
}

/// What a flow widget's accounts and money held when the open slot began: the slot's energy and
/// money are what they gained since. Differences of the day's own totals, so the slots of a day
/// add up to the day exactly, however late a slow meter's energy is counted (it lands in the slot
/// open when it is counted).
struct SlotBase: Sendable, Equatable {
    /// Every account, node by node in the widget's order (as `roundedAccountsKWh` lists them).
    var accountsKWh: [Double] = []
    var money: DayMoney?
    /// The standing charge accrued through the day when the slot began.
    var standingCharge = 0.0
}

/// The day's course in 15-minute slots: each closes at its end (a deadline of the engine) or with
/// the day, and goes out as `Output.closedSlot` per flow widget.
extension FlowEngine {
    /// Opens the slot that starts at `start`: every widget's base is what its accounts hold now.
    mutating func beginSlot(at start: Date, standingCharge: Double) {
        dayClock.openSlot = OpenSlot(start: start)
        for position in flowPositions {
            board.widgets[position].flow!.slotBase = SlotBase(
                accountsKWh: board.widgets[position].flow!.accountsKWh, money: board.widgets[position].flow!.money, standingCharge: standingCharge)
        }
    }

    /// Closes every slot that ends by `limit`, before the end of `day`: the day's last slot closes
    /// with the day (`closeDay`), once its accounts are carried to midnight.
    mutating func closeSlots(endingBy limit: Date, in day: LocalDay, into out: inout [Output]) {
        while let slot = dayClock.openSlot, slot.end <= limit, slot.end < day.end {
            closeSlot(at: slot.end, in: day, into: &out)
            beginSlot(at: slot.end, standingCharge: standingCharge(at: slot.end, in: day))
        }
    }

    /// Hands out every flow widget's open slot as closed at `end`; returns them.
    @discardableResult
    mutating func closeSlot(at end: Date, in day: LocalDay, into out: inout [Output]) -> [ClosedSlot] {
        guard let slot = dayClock.openSlot else { return [] }
        let standing = standingCharge(at: end, in: day)
        let closed = flowPositions.map { closedSlot(of: $0, from: slot.start, to: end, standingCharge: standing) }
        out += closed.map { .closedSlot($0) }
        return closed
    }

    /// Widget `position`'s slot from `start` to `end`: what its accounts and money gained since the
    /// slot's base.
    func closedSlot(of position: Int, from start: Date, to end: Date, standingCharge: Double) -> ClosedSlot {
        let base = board.widgets[position].flow!.slotBase
        var energy: [String: [EnergyAccount: Double]] = [:]
        var index = 0
        for node in board.widgets[position].flow!.nodes {
            var accounts: [EnergyAccount: Double] = [:]
            for (kind, total) in zip(node.setup.accountKinds, node.accounts) {
                accounts[kind] = total.energyKWh - (index < base.accountsKWh.count ? base.accountsKWh[index] : 0)
                index += 1
            }
            energy[node.place.description] = accounts
        }
        let money = slotMoney(of: position, exchangeKWh: energy[NodePlace.exchange.description] ?? [:], end: end, standingCharge: standingCharge)
        return ClosedSlot(widget: board.widgets[position].name, start: start, energyKWh: energy, money: money)
    }

    /// Widget `position`'s money of the slot ending at `end`; nil when it is not priced.
    func slotMoney(of position: Int, exchangeKWh: [EnergyAccount: Double], end: Date, standingCharge: Double) -> SlotMoney? {
        guard let money = board.widgets[position].flow!.money, let tariff = config.tariff else { return nil }
        let base = board.widgets[position].flow!.slotBase
        let before = base.money ?? DayMoney()
        var unpriced = money.unpricedKWh
        for (account, kWh) in before.unpricedKWh { unpriced[account, default: 0] -= kWh }
        unpriced = unpriced.filter { $0.value > 0 }
        let importCost = money.importCost - before.importCost
        let exportEarnings = money.exportEarnings - before.exportEarnings
        // The price as billed where energy flowed; else the one in force at the slot's last instant.
        let last = end.addingTimeInterval(-0.001)
        func billed(_ amount: Double, _ account: EnergyAccount, _ prices: PriceTimeline?) -> Double? {
            guard let prices else { return nil }
            return SlotMoney.billedPrice(amount, energyKWh: exchangeKWh[account] ?? 0, unpricedKWh: unpriced[account] ?? 0)
                ?? prices.price(at: last, zone: zone)
        }
        return SlotMoney(
            currency: tariff.currency, importCost: importCost, exportEarnings: exportEarnings,
            standingCharge: standingCharge - base.standingCharge, importPricePerKWh: billed(importCost, .imported, pricing.importPrices),
            exportPricePerKWh: billed(exportEarnings, .exported, pricing.exportPrices), unpricedKWh: unpriced)
    }
}
