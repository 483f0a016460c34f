import FoundationEssentials

/// One direction of energy a node counts over the day. Every node counts every direction it has,
/// whether or not the widget shows one (`total:` chooses which, if any): Home Assistant's Energy
/// dashboard, and the day's balance, need both sides of the grid and of the battery.
public enum EnergyAccount: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// An input's energy (solar, a generator).
    case production
    /// The output's energy (the home).
    case consumption
    /// Energy drawn from the grid.
    case imported = "import"
    /// Energy returned to the grid.
    case exported = "export"
    /// Energy into the battery.
    case charged = "charge"
    /// Energy out of the battery.
    case discharged = "discharge"

    /// The config's word for it (`import`, `charge`), also its key in the state and the outputs.
    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The directions a node in `slot` has, its natural one first (the one `integrate` and a bare
    /// counter total mean).
    public static func accounts(of slot: FlowSlot) -> [EnergyAccount] {
        switch slot {
        case .inputs: [.production]
        case .output: [.consumption]
        case .exchange: [.imported, .exported]
        case .storage: [.charged, .discharged]
        }
    }

    /// The account a `total:` counts in `slot`: a direction word its own, `integrate` and a
    /// counter the slot's natural direction (what they meant before there were accounts).
    public static func counted(by total: TotalSpec, in slot: FlowSlot) -> EnergyAccount {
        switch total {
        case .imported: .imported
        case .exported: .exported
        case .charged: .charged
        case .discharged: .discharged
        case .integrate, .counter, .daily: accounts(of: slot)[0]
        }
    }

    /// The total that integrates this direction from the signed rate.
    public var integrated: TotalSpec {
        switch self {
        case .production, .consumption: .integrate
        case .imported: .imported
        case .exported: .exported
        case .charged: .charged
        case .discharged: .discharged
        }
    }

    /// Whether the energy comes into the home's balance (production, import, discharge) rather
    /// than leaving it (consumption, export, charge).
    public var isSupply: Bool {
        switch self {
        case .production, .imported, .discharged: true
        case .consumption, .exported, .charged: false
        }
    }

    /// The account's energy in a JSON object keyed by the account words, at full resolution.
    public static func json(_ accounts: [EnergyAccount: Double]) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: accounts.map { ($0.key.rawValue, JSONValue.number($0.value)) }))
    }
}

extension NodeConfig {
    /// Every account the node keeps and the total that counts it, in the slot's order: the
    /// account `total:` shows reads what `total:` says (or the counter `accounts:` gives it), the
    /// others what `accounts:` says, else the integral of the rate.
    public func accountTotals(in slot: FlowSlot) -> [(account: EnergyAccount, total: TotalSpec)] {
        let shown = total.map { EnergyAccount.counted(by: $0, in: slot) }
        return EnergyAccount.accounts(of: slot).map { account in
            let evidence = accounts[account]
            guard account == shown, let total else { return (account, evidence ?? account.integrated) }
            if total.counterSource == nil, let evidence, evidence.counterSource != nil { return (account, evidence) }
            return (account, total)
        }
    }

    /// The account the widget shows, if the node has `total:`.
    public func shownAccount(in slot: FlowSlot) -> EnergyAccount? {
        total.map { EnergyAccount.counted(by: $0, in: slot) }
    }
}

/// The day's accounts of one flow widget: each direction of each node, summed by account, and
/// whether supply and use agree.
public struct AccountBalance: Sendable, Equatable {
    public var accountsKWh: [EnergyAccount: Double]

    /// Past this share of the day's consumption, supply and use disagree for a reason worth a
    /// line: 3 % is above what two meters of accuracy class 1 (±1 % each) and the trapezoid's
    /// error on a minute's readings add up to, and below an hour of a typical home's evening load
    /// missing from a counter (one hour of ~0.5 kW in a ~10 kWh day is 5 %).
    public static let toleratedGapShare = 0.03

    public init(accountsKWh: [EnergyAccount: Double]) {
        self.accountsKWh = accountsKWh
    }

    public var supplyKWh: Double { accountsKWh.filter(\.key.isSupply).values.reduce(0, +) }
    public var useKWh: Double { accountsKWh.filter { !$0.key.isSupply }.values.reduce(0, +) }
    /// Supply − use: positive when more came in than the accounts say left.
    public var gapKWh: Double { supplyKWh - useKWh }

    /// Whether supply and use must meet: only with the home's use and the grid that makes up the
    /// difference. A solar-only widget's production goes to a home and a grid it does not show;
    /// a grid-only widget's import to a home it does not show.
    public var canAddUp: Bool { accountsKWh[.consumption] != nil && accountsKWh[.imported] != nil }

    /// Whether the accounts can add up and the gap is past the tolerated share of consumption.
    public var isOff: Bool {
        canAddUp && abs(gapKWh) > Self.toleratedGapShare * max(accountsKWh[.consumption]!, 0.1)
    }

    /// Every account in kWh (Wh resolution), supply and use summed: `production 21.4 + import 3.2 =
    /// 24.6 kWh in, consumption 19.5 + export 5.1 = 24.6 kWh out`.
    public var sides: String {
        func side(_ supply: Bool) -> String {
            let parts = accountsKWh.keys.sorted().filter { $0.isSupply == supply }.map { "\($0) \(Self.kWh(accountsKWh[$0]!))" }
            return parts.isEmpty ? "nothing" : parts.joined(separator: " + ")
        }
        return "\(side(true)) = \(Self.kWh(supplyKWh)) kWh in, \(side(false)) = \(Self.kWh(useKWh)) kWh out"
    }

    static func kWh(_ value: Double) -> String { JSONValue.format(PatchPolicy.quantize(value, step: 0.001)) }

    /// One line for a closed day: `sides`, and the gap when it is past the tolerance; only the
    /// accounts where they cannot add up.
    public var text: String {
        let kWh = Self.kWh
        guard canAddUp else {
            let listed = accountsKWh.keys.sorted().map { "\($0) \(kWh(accountsKWh[$0]!)) kWh" }.joined(separator: ", ")
            return "\(listed) (without a home and a grid node, supply and use need not meet)"
        }
        guard isOff else { return "\(sides): they add up" }
        let base = accountsKWh[.consumption]!
        let share = JSONValue.format(PatchPolicy.quantize(abs(gapKWh) / max(base, 0.1) * 100, step: 0.1))
        let which = gapKWh > 0 ? "in exceeds out" : "out exceeds in"
        return "\(sides): \(which) by \(kWh(abs(gapKWh))) kWh (\(share) % of consumption); a meter or counter missed energy"
    }
}
