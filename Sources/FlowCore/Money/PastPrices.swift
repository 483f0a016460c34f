import FoundationEssentials

/// The prices a reload replaced: what each direction cost under the tariff in force before it,
/// from the earliest stretch still to be priced up to the reload. A counter's rise that began
/// before the reload is priced by it up to the reload, and by the new tariff only from there;
/// without it, the whole rise would take the new tariff, the past repriced.
///
/// Kept as billed prices (fees and VAT in) by stretch, since the old tariff's config is gone, and
/// saved with the state until no stretch still to be priced reaches back before the reload.
public struct PastPrices: Sendable, Equatable {
    /// The billed price per kWh from `from` on (nil: unknown, the energy unpriced).
    public struct Stretch: Sendable, Equatable {
        public var from: Date
        public var pricePerKWh: Double?
    }

    /// The reload: the new tariff prices from here.
    public var until: Date
    /// Per direction (`imported`: the import price, `exported`: the export price), the stretches
    /// oldest first, the first from the earliest instant still to be priced at the reload.
    public var stretches: [EnergyAccount: [Stretch]]

    /// The price in force at `instant` (before `until`), and when it next changes (at most `until`).
    func stretch(of side: EnergyAccount, at instant: Date) -> (pricePerKWh: Double?, end: Date) {
        let list = stretches[side] ?? []
        guard let index = list.lastIndex(where: { $0.from <= instant }) else { return (nil, min(list.first?.from ?? until, until)) }
        return (list[index].pricePerKWh, index + 1 < list.count ? min(list[index + 1].from, until) : until)
    }

    /// The wall clock stepped by `seconds` without that time passing.
    mutating func shift(by seconds: Double) {
        until.addTimeInterval(seconds)
        for side in stretches.keys {
            for index in stretches[side]!.indices { stretches[side]![index].from.addTimeInterval(seconds) }
        }
    }

    /// As saved: `{"until": t, "currency": code, "imported": [[from, price or null], …], …}`.
    func json(currency: Currency) -> JSONValue {
        var members: [String: JSONValue] = ["until": .number(until.timeIntervalSince1970), "currency": .string(currency.code)]
        for (side, list) in stretches {
            members[side.rawValue] = .array(list.map { .array([.number($0.from.timeIntervalSince1970), $0.pricePerKWh.map(JSONValue.number) ?? .null]) })
        }
        return .object(members)
    }

    /// Saved past prices, when every number is plausible and they are in `currency`; nil otherwise
    /// (the stretches before the reload then take the tariff in force now).
    static func restored(from json: JSONValue?, currency: Currency, times: ClosedRange<Double>) -> PastPrices? {
        guard let json, json["currency"]?.stringValue == currency.code, let until = json["until"]?.numberValue, times.contains(until) else { return nil }
        var past = PastPrices(until: Date(timeIntervalSince1970: until), stretches: [:])
        for side in [EnergyAccount.imported, .exported] {
            guard let list = json[side.rawValue]?.arrayValue else { continue }
            var stretches: [Stretch] = []
            for item in list {
                guard let entry = item.arrayValue, entry.count == 2, let from = entry[0].numberValue, times.contains(from), from <= until,
                    stretches.last.map({ $0.from.timeIntervalSince1970 <= from }) ?? true
                else { return nil }
                let price: Double?
                if entry[1] == .null {
                    price = nil
                } else {
                    // A billed price: the largest base price with fees and VAT on top, never beyond ten times it.
                    guard let number = entry[1].numberValue, abs(number) <= TariffConfig.largestPricePerKWh * 10 else { return nil }
                    price = number
                }
                stretches.append(Stretch(from: Date(timeIntervalSince1970: from), pricePerKWh: price))
            }
            past.stretches[side] = stretches
        }
        return past
    }
}
