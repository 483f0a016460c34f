import FoundationEssentials

/// A reloaded config: the new engine takes over what the old one had sent and knew of the
/// connection.
extension FlowEngine {
    /// Takes over what the widgets of `old` (the engine of a config being reloaded) were sent, for
    /// widgets of the same name: the next push is a patch from what each widget shows. And what
    /// `old` knew of the connection: when it subscribed, and which sources of the same name spoke.
    /// Its accounts go out if `old`'s did (`handsOverAccounts`: the sinks did not change).
    public mutating func adoptDeliveries(from old: FlowEngine) {
        handsOverAccounts = old.handsOverAccounts
        for position in board.widgets.indices {
            if let previous = old.board.widgets.first(where: { $0.name == board.widgets[position].name }) { board.widgets[position].adopt(previous) }
        }
        subscribedAt = old.subscribedAt
        for position in bank.sources.indices {
            if let previous = old.bank.sources.first(where: { $0.config.name == bank.sources[position].config.name }) {
                bank.sources[position].adoptSession(from: previous)
            }
        }
    }

    /// Keeps the prices of `old`'s tariff (the engine of a config being reloaded at `now`) for
    /// what flowed before the reload: a stretch still to be priced that began before it (a
    /// counter's rise, read after the reload) is priced by the tariff in force while it flowed,
    /// the new tariff only from `now`. Call it once the day is restored from `old`'s snapshot.
    public mutating func adoptPrices(from old: FlowEngine, at now: Date) {
        guard let tariff = config.tariff, let since = pendingSince, since < now else { return }
        // Without a tariff before the reload, what flowed then had no price: unpriced, as what
        // flowed before the money began (no stretch of either side), never priced at 0.
        guard let oldTariff = old.config.tariff else {
            pricing.past = PastPrices(until: now, stretches: [:])
            return
        }
        pricing.past = old.pricing.past(from: since, until: now, zone: old.zone, sameCurrency: oldTariff.currency == tariff.currency)
    }
}
