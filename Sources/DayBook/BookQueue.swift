import FlowCore
import FoundationEssentials

/// Closed slots and days that wait for the book: kept in the state file, so that a book that
/// cannot be written (locked, damaged, a full disk, a read-only folder) loses nothing, and a
/// restart takes up what was not written yet.
///
/// Bounded: what closed more than `keptSeconds` (a week) before the latest slot is let go, the
/// oldest first, and counted in `dropped`, so the state stays small however long the book is out.
public struct BookQueue: Sendable, Equatable {
    public static let keptSeconds: Double = 7 * 86_400

    public private(set) var slots: [ClosedSlot] = []
    public private(set) var days: [BookDay] = []
    /// Slots and days let go since the daemon started (said in the log).
    public private(set) var dropped = 0

    public init() {}

    public var isEmpty: Bool { slots.isEmpty && days.isEmpty }
    public var count: Int { slots.count + days.count }

    public mutating func add(_ slot: ClosedSlot) {
        slots.append(slot)
        let horizon = slot.start.addingTimeInterval(-Self.keptSeconds)
        let old = slots.prefix { $0.start < horizon }.count
        if old > 0 {
            slots.removeFirst(old)
            dropped += old
        }
    }

    public mutating func add(_ day: BookDay) {
        days.append(day)
        if let latest = days.last?.end {
            let old = days.prefix { $0.end < latest.addingTimeInterval(-Self.keptSeconds) }.count
            if old > 0 {
                days.removeFirst(old)
                dropped += old
            }
        }
    }

    /// Takes what of the engine's outputs is for the book: a closed slot, a closed day's rows
    /// (`zone`: the day's bounds). The daemon and `replay --book` both fill the book through this.
    public mutating func take(_ output: FlowEngine.Output, zone: any LocalTimeZone) {
        switch output {
        case .closedSlot(let slot): add(slot)
        case .closedDay(let day): BookDay.rows(of: day, zone: zone).forEach { add($0) }
        default: break
        }
    }

    /// Lets go of what a writer took and wrote: each slot and day equal to one written. Not by
    /// position: what closed meanwhile is appended, and a queue at its bound lets its oldest go.
    public mutating func written(slots writtenSlots: [ClosedSlot], days writtenDays: [BookDay]) {
        var slotsByKey: [String: ClosedSlot] = [:]
        for slot in writtenSlots { slotsByKey["\(slot.widget)\n\(slot.start.timeIntervalSince1970)"] = slot }
        slots.removeAll { slotsByKey["\($0.widget)\n\($0.start.timeIntervalSince1970)"] == $0 }
        var daysByKey: [String: BookDay] = [:]
        for day in writtenDays { daysByKey["\(day.widget)\n\(day.date)"] = day }
        days.removeAll { daysByKey["\($0.widget)\n\($0.date)"] == $0 }
    }

    // MARK: - In the state file

    /// The state file's member that holds the queue.
    public static let stateKey = "book"

    /// The queue a saved state holds (empty when none).
    public init(state: JSONValue?) { self.init(json: state?[Self.stateKey]) }

    /// `snapshot` (a state's top-level object) with the queue in it, or without one when nothing waits.
    public func saved(in snapshot: JSONValue) -> JSONValue {
        guard case .object(var members) = snapshot else { return snapshot }
        members[Self.stateKey] = json
        return .object(members)
    }

    /// The queue as the state file keeps it; nil when nothing waits.
    public var json: JSONValue? {
        guard !isEmpty else { return nil }
        return .object(["slots": .array(slots.map(Self.json(of:))), "days": .array(days.map(Self.json(of:)))])
    }

    /// The queue from the state file; what it cannot read is left out, never guessed.
    public init(json: JSONValue?) {
        slots = json?["slots"]?.arrayValue?.compactMap(Self.slot(from:)) ?? []
        days = json?["days"]?.arrayValue?.compactMap(Self.day(from:)) ?? []
    }

    static func json(of slot: ClosedSlot) -> JSONValue {
        var members: [String: JSONValue] = [
            "widget": .string(slot.widget), "start": .number(slot.start.timeIntervalSince1970),
            "nodes": .object(slot.energyKWh.mapValues(json(of:))),
        ]
        if let money = slot.money {
            var amounts = json(of: BookMoney(slot: money))
            if case .object(var fields) = amounts {
                fields["import_price"] = money.importPricePerKWh.map(JSONValue.number)
                fields["export_price"] = money.exportPricePerKWh.map(JSONValue.number)
                amounts = .object(fields)
            }
            members["money"] = amounts
        }
        return .object(members)
    }

    static func slot(from json: JSONValue) -> ClosedSlot? {
        guard let widget = json["widget"]?.stringValue, let start = json["start"]?.numberValue,
            let nodes = json["nodes"]?.objectValue
        else { return nil }
        let money = json["money"].flatMap(money(from:)).map { amounts in
            SlotMoney(
                currency: amounts.currency, importCost: amounts.importCost, exportEarnings: amounts.exportEarnings,
                standingCharge: amounts.standingCharge, importPricePerKWh: json["money"]?["import_price"]?.numberValue,
                exportPricePerKWh: json["money"]?["export_price"]?.numberValue, unpricedKWh: amounts.unpricedKWh)
        }
        return ClosedSlot(widget: widget, start: Date(timeIntervalSince1970: start), energyKWh: nodes.mapValues(accounts(from:)), money: money)
    }

    static func json(of day: BookDay) -> JSONValue {
        var members: [String: JSONValue] = [
            "widget": .string(day.widget), "date": .string(day.date.description), "start": .number(day.start.timeIntervalSince1970),
            "end": .number(day.end.timeIntervalSince1970), "hours": .number(day.hours),
            "nodes": .object(day.nodeAccountsKWh.mapValues(json(of:))),
        ]
        if let level = day.levelRangePercent { members["level"] = .array([.number(level.lowerBound), .number(level.upperBound)]) }
        if let money = day.money { members["money"] = json(of: money) }
        return .object(members)
    }

    static func day(from json: JSONValue) -> BookDay? {
        guard let widget = json["widget"]?.stringValue, let date = json["date"]?.stringValue.flatMap(CivilDate.init),
            let start = json["start"]?.numberValue, let end = json["end"]?.numberValue, let hours = json["hours"]?.numberValue,
            let nodes = json["nodes"]?.objectValue
        else { return nil }
        let level = json["level"]?.arrayValue.flatMap { bounds -> ClosedRange<Double>? in
            guard bounds.count == 2, let low = bounds[0].numberValue, let high = bounds[1].numberValue, low <= high else { return nil }
            return low...high
        }
        return BookDay(
            widget: widget, date: date, start: Date(timeIntervalSince1970: start), end: Date(timeIntervalSince1970: end), hours: hours,
            nodeAccountsKWh: nodes.mapValues(accounts(from:)), levelRangePercent: level, money: json["money"].flatMap(money(from:)))
    }

    static func json(of accounts: [EnergyAccount: Double]) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: accounts.map { ($0.key.rawValue, JSONValue.number($0.value)) }))
    }

    static func accounts(from json: JSONValue) -> [EnergyAccount: Double] {
        var accounts: [EnergyAccount: Double] = [:]
        for (key, value) in json.objectValue ?? [:] {
            if let account = EnergyAccount(rawValue: key), let energy = value.numberValue { accounts[account] = energy }
        }
        return accounts
    }

    static func json(of money: BookMoney) -> JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(money.currency.code), "import_cost": .number(money.importCost),
            "export_earnings": .number(money.exportEarnings), "standing_charge": .number(money.standingCharge),
            "unpriced": json(of: money.unpricedKWh),
        ]
        if let saved = money.saved { members["saved"] = .number(saved) }
        return .object(members)
    }

    static func money(from json: JSONValue) -> BookMoney? {
        guard let currency = json["currency"]?.stringValue.flatMap(Currency.init(code:)), let importCost = json["import_cost"]?.numberValue,
            let exportEarnings = json["export_earnings"]?.numberValue, let standingCharge = json["standing_charge"]?.numberValue
        else { return nil }
        return BookMoney(
            currency: currency, importCost: importCost, exportEarnings: exportEarnings, standingCharge: standingCharge,
            saved: json["saved"]?.numberValue, unpricedKWh: json["unpriced"].map(accounts(from:)) ?? [:])
    }
}
