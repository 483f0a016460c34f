import FlowCore
import FoundationEssentials
import Glibc

/// The home's day book: every closed 15-minute slot and every closed local day, in one SQLite file
/// (`sqlite3 book.sqlite` or Grafana's SQLite source reads it as well).
///
/// Rows are keyed by what they count (widget, node, slot start or day), and written with
/// `INSERT OR REPLACE`: the same slot written twice (a restart that closes it again, a replay of
/// the same trace) is one row, never two. One call to `write` is one transaction, so a slot's rows
/// are all there or none are.
///
/// On an SD card every sync counts: the file is in WAL mode, a commit appends its pages to the
/// write-ahead log and syncs it once, and the log is folded back into the file every 1,000 pages.
///
/// Why `synchronous=FULL`, a sync at every commit (96 a day, a slot each), and not `NORMAL`, which
/// syncs the log only when it is folded back: the daemon lets a slot go from the queue in its
/// state as soon as `write` returns, and the next save of the state (within a minute) no longer
/// holds it. Under `NORMAL` that commit is not on the disk until the next fold (some 500 pages a
/// day: every two days), so a power cut in between would lose the slot from the book and from the
/// state alike. Keeping it another way would cost as much: a fold forced before the state lets a
/// slot go is a sync at every slot all the same, and a queue that keeps written slots until the
/// next fold puts up to two days of them into every save of the state. FULL keeps the rule plain:
/// a slot leaves the state only once the book holds it on the disk.
public final class DayBook {
    public let path: String
    let database: SQLiteDatabase

    /// Opens the book at `path`; `create`: makes it (and its tables) when there is none.
    /// `readOnly`: for readers (`history`, `check`), which never change a file.
    public init(path: String, create: Bool = true, readOnly: Bool = false) throws(BookError) {
        self.path = path
        database = try SQLiteDatabase(path: path, create: create && !readOnly, readOnly: readOnly)
        if readOnly {
            let found = try database.integer("PRAGMA user_version")
            guard found <= BookSchema.version else {
                throw BookError(path: path, reason: "has schema version \(found), newer than this flowbridge's \(BookSchema.version)")
            }
            guard found > 0 else { throw BookError(path: path, reason: "holds no days yet (no book tables)") }
        } else {
            // A file that is not SQLite fails here, at the first read of its header.
            _ = try database.integer("PRAGMA journal_mode = WAL")  // answers with the mode, a row to read
            try database.execute("PRAGMA synchronous = FULL")
            try BookSchema.migrate(database)
        }
    }

    // MARK: - Writing

    /// Writes closed slots and days in one transaction; rows already there are replaced.
    public func write(slots: [ClosedSlot], days: [BookDay]) throws(BookError) {
        guard !slots.isEmpty || !days.isEmpty else { return }
        let accounts = BookSchema.accountColumns.joined(separator: ", ")
        let unpriced = BookSchema.unpricedColumns.joined(separator: ", ")
        let nodeMarks = Self.marks(3 + BookSchema.accountColumns.count)
        try database.transaction { () throws(BookError) in
            let slotRow = try database.prepare(
                "INSERT OR REPLACE INTO slots (widget, start_utc, currency, import_price_per_kWh, export_price_per_kWh, import_cost, export_earnings, standing_charge, \(unpriced)) VALUES \(Self.marks(8 + BookSchema.unpricedColumns.count))")
            let clearSlotNodes = try database.prepare("DELETE FROM slot_nodes WHERE widget = ? AND start_utc = ?")
            let slotNode = try database.prepare("INSERT INTO slot_nodes (widget, start_utc, node, \(accounts)) VALUES \(nodeMarks)")
            for slot in slots {
                // Keyed by the slot's aligned start: the first slot of a run begins at its first
                // event, and a restart that closes it again must meet the same row.
                let start = SQLiteDatabase.Value.integer(Int64(ClosedSlot.start(of: slot.start).timeIntervalSince1970))
                let money = slot.money
                try slotRow.run(
                    [
                        .text(slot.widget), start, money.map { .text($0.currency.code) }, Self.real(money?.importPricePerKWh),
                        Self.real(money?.exportPricePerKWh), Self.real(money?.importCost), Self.real(money?.exportEarnings),
                        Self.real(money?.standingCharge),
                    ] + Self.accountValues(money?.unpricedKWh, whenAbsent: money == nil ? nil : 0))
                try clearSlotNodes.run([.text(slot.widget), start])
                for (node, energy) in slot.energyKWh.sorted(by: { $0.key < $1.key }) {
                    try slotNode.run([.text(slot.widget), start, .text(node)] + Self.accountValues(energy, whenAbsent: nil))
                }
            }
            let dayRow = try database.prepare(
                "INSERT OR REPLACE INTO days (widget, day, start_utc, end_utc, hours, level_min_percent, level_max_percent, currency, import_cost, export_earnings, standing_charge, net_cost, saved, \(unpriced)) VALUES \(Self.marks(13 + BookSchema.unpricedColumns.count))"
            )
            let clearDayNodes = try database.prepare("DELETE FROM day_nodes WHERE widget = ? AND day = ?")
            let dayNode = try database.prepare("INSERT INTO day_nodes (widget, day, node, \(accounts)) VALUES \(nodeMarks)")
            for day in days {
                let date = SQLiteDatabase.Value.text(day.date.description)
                let money = day.money
                try dayRow.run(
                    [
                        .text(day.widget), date, .integer(Int64(day.start.timeIntervalSince1970)), .integer(Int64(day.end.timeIntervalSince1970)),
                        .real(day.hours), Self.real(day.levelRangePercent?.lowerBound), Self.real(day.levelRangePercent?.upperBound),
                        money.map { .text($0.currency.code) }, Self.real(money?.importCost), Self.real(money?.exportEarnings),
                        Self.real(money?.standingCharge), Self.real(money?.netCost), Self.real(money?.saved),
                    ] + Self.accountValues(money?.unpricedKWh, whenAbsent: money == nil ? nil : 0))
                try clearDayNodes.run([.text(day.widget), date])
                for (node, energy) in day.nodeAccountsKWh.sorted(by: { $0.key < $1.key }) {
                    try dayNode.run([.text(day.widget), date, .text(node)] + Self.accountValues(energy, whenAbsent: nil))
                }
            }
        }
    }

    // MARK: - Reading

    /// The closed days from `first` through `last` (local dates), by date then widget.
    public func days(from first: CivilDate, through last: CivilDate) throws(BookError) -> [BookDay] {
        let unpriced = BookSchema.unpricedColumns.joined(separator: ", ")
        let rows = try database.prepare(
            "SELECT widget, day, start_utc, end_utc, hours, level_min_percent, level_max_percent, currency, import_cost, export_earnings, standing_charge, saved, \(unpriced) FROM days WHERE day BETWEEN ? AND ? ORDER BY day, widget"
        )
        try rows.bind([.text(first.description), .text(last.description)])
        var days: [BookDay] = []
        while try rows.step() {
            guard let date = CivilDate(rows.text(1)) else { continue }
            let level = rows.real(5).flatMap { low in rows.real(6).map { low...max(low, $0) } }
            days.append(
                BookDay(
                    widget: rows.text(0), date: date, start: Date(timeIntervalSince1970: Double(rows.integer(2))),
                    end: Date(timeIntervalSince1970: Double(rows.integer(3))), hours: rows.real(4) ?? 24, nodeAccountsKWh: [:],
                    levelRangePercent: level,
                    money: Self.money(rows, currency: 7, amounts: 8, saved: 11, unpricedFrom: 12)))
        }
        let nodes = try database.prepare(
            "SELECT widget, day, node, \(BookSchema.accountColumns.joined(separator: ", ")) FROM day_nodes WHERE day BETWEEN ? AND ?")
        try nodes.bind([.text(first.description), .text(last.description)])
        var index: [String: Int] = [:]
        for (position, day) in days.enumerated() { index["\(day.widget)\n\(day.date)"] = position }
        while try nodes.step() {
            guard let position = index["\(nodes.text(0))\n\(nodes.text(1))"] else { continue }
            days[position].nodeAccountsKWh[nodes.text(2)] = Self.accounts(nodes, from: 3)
        }
        return days
    }

    /// The closed slots that start in `start..<end`, by start then widget.
    public func slots(from start: Date, to end: Date) throws(BookError) -> [ClosedSlot] {
        let unpriced = BookSchema.unpricedColumns.joined(separator: ", ")
        let bounds: [SQLiteDatabase.Value?] = [
            .integer(Int64(start.timeIntervalSince1970.rounded(.down))), .integer(Int64(end.timeIntervalSince1970.rounded(.up))),
        ]
        let rows = try database.prepare(
            "SELECT widget, start_utc, currency, import_price_per_kWh, export_price_per_kWh, import_cost, export_earnings, standing_charge, \(unpriced) FROM slots WHERE start_utc >= ? AND start_utc < ? ORDER BY start_utc, widget"
        )
        try rows.bind(bounds)
        var slots: [ClosedSlot] = []
        var index: [String: Int] = [:]
        while try rows.step() {
            let money = Self.money(rows, currency: 2, amounts: 5, saved: nil, unpricedFrom: 8).map { money in
                SlotMoney(
                    currency: money.currency, importCost: money.importCost, exportEarnings: money.exportEarnings,
                    standingCharge: money.standingCharge, importPricePerKWh: rows.real(3), exportPricePerKWh: rows.real(4),
                    unpricedKWh: money.unpricedKWh)
            }
            index["\(rows.text(0))\n\(rows.integer(1))"] = slots.count
            slots.append(
                ClosedSlot(widget: rows.text(0), start: Date(timeIntervalSince1970: Double(rows.integer(1))), energyKWh: [:], money: money))
        }
        let nodes = try database.prepare(
            "SELECT widget, start_utc, node, \(BookSchema.accountColumns.joined(separator: ", ")) FROM slot_nodes WHERE start_utc >= ? AND start_utc < ?"
        )
        try nodes.bind(bounds)
        while try nodes.step() {
            guard let position = index["\(nodes.text(0))\n\(nodes.integer(1))"] else { continue }
            slots[position].energyKWh[nodes.text(2)] = Self.accounts(nodes, from: 3)
        }
        return slots
    }

    /// What `check` says of the book.
    public struct Summary: Sendable, Equatable {
        public var dayCount: Int
        public var slotCount: Int
        public var firstDay: CivilDate?
        public var lastDay: CivilDate?
        /// The file, its write-ahead log included.
        public var sizeBytes: Int64
    }

    public func summary() throws(BookError) -> Summary {
        let range = try database.prepare("SELECT COUNT(DISTINCT day), MIN(day), MAX(day) FROM days")
        _ = try range.step()
        let slotCount = try database.integer("SELECT COUNT(*) FROM slots")
        return Summary(
            dayCount: Int(range.integer(0)), slotCount: Int(slotCount), firstDay: CivilDate(range.text(1)), lastDay: CivilDate(range.text(2)),
            sizeBytes: Self.fileSize(path) + Self.fileSize(path + "-wal"))
    }

    // MARK: - Rows and columns

    private static func marks(_ count: Int) -> String { "(" + Array(repeating: "?", count: count).joined(separator: ", ") + ")" }

    private static func real(_ value: Double?) -> SQLiteDatabase.Value? { value.map { .real($0) } }

    /// One value per account column: the account's energy, `whenAbsent` for an account not there.
    private static func accountValues(_ energy: [EnergyAccount: Double]?, whenAbsent: Double?) -> [SQLiteDatabase.Value?] {
        EnergyAccount.allCases.map { account in real(energy?[account] ?? whenAbsent) }
    }

    /// The account columns from `first` on: the accounts the row has (NULL: the node has none).
    private static func accounts(_ row: SQLiteDatabase.Statement, from first: Int32) -> [EnergyAccount: Double] {
        var accounts: [EnergyAccount: Double] = [:]
        for (offset, account) in EnergyAccount.allCases.enumerated() {
            if let energy = row.real(first + Int32(offset)) { accounts[account] = energy }
        }
        return accounts
    }

    /// The money columns of a row; nil when it has no currency (no tariff then).
    private static func money(_ row: SQLiteDatabase.Statement, currency: Int32, amounts: Int32, saved: Int32?, unpricedFrom: Int32) -> BookMoney? {
        guard !row.isNull(currency), let code = Currency(code: row.text(currency)) else { return nil }
        return BookMoney(
            currency: code, importCost: row.real(amounts) ?? 0, exportEarnings: row.real(amounts + 1) ?? 0,
            standingCharge: row.real(amounts + 2) ?? 0, saved: saved.flatMap { row.real($0) },
            unpricedKWh: accounts(row, from: unpricedFrom).filter { $0.value != 0 })
    }

    private static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}
