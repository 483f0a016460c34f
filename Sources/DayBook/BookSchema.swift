import FlowCore

/// The book's tables, and how a file written by an older flowbridge is brought up to date.
///
/// The schema version is SQLite's `PRAGMA user_version`: 0 in a new file, the number of
/// migrations applied after. Each migration runs once, in one transaction with the version it
/// sets, so a file is always at one version or the next. A file newer than this flowbridge knows
/// is refused, never written: an older daemon must not spoil a newer one's rows.
///
/// Tables (every energy column in kWh, every amount in the row's `currency`, every instant in
/// Unix seconds, a day as its local date `YYYY-MM-DD`):
/// - `days`: one row per flow widget and closed local day: its length, the battery's range, the
///   money billed;
/// - `day_nodes`: one row per widget, day and node (`inputs[0]`, `exchange`): every account;
/// - `slots`: one row per widget and 15-minute slot (UTC-aligned): the prices billed and the money;
/// - `slot_nodes`: one row per widget, slot and node: every account.
enum BookSchema {
    /// Every account's column: `production_kWh`, `import_kWh` …
    static let accountColumns = EnergyAccount.allCases.map { "\($0.rawValue)_kWh" }
    /// Energy that flowed without a known price, by account.
    static let unpricedColumns = EnergyAccount.allCases.map { "unpriced_\($0.rawValue)_kWh" }

    private static var accountsDeclared: String { accountColumns.map { "\($0) REAL" }.joined(separator: ", ") }
    private static var unpricedDeclared: String { unpricedColumns.map { "\($0) REAL" }.joined(separator: ", ") }

    /// The migrations in order: index 0 takes a file from version 0 to 1.
    static var migrations: [String] {
        [
            """
            CREATE TABLE days (
                widget TEXT NOT NULL, day TEXT NOT NULL, start_utc INTEGER NOT NULL, end_utc INTEGER NOT NULL,
                hours REAL NOT NULL, level_min_percent REAL, level_max_percent REAL,
                currency TEXT, import_cost REAL, export_earnings REAL, standing_charge REAL, net_cost REAL, saved REAL,
                \(unpricedDeclared),
                PRIMARY KEY (widget, day)) WITHOUT ROWID;
            CREATE TABLE day_nodes (
                widget TEXT NOT NULL, day TEXT NOT NULL, node TEXT NOT NULL, \(accountsDeclared),
                PRIMARY KEY (widget, day, node)) WITHOUT ROWID;
            CREATE TABLE slots (
                widget TEXT NOT NULL, start_utc INTEGER NOT NULL,
                currency TEXT, import_price_per_kWh REAL, export_price_per_kWh REAL,
                import_cost REAL, export_earnings REAL, standing_charge REAL, \(unpricedDeclared),
                PRIMARY KEY (widget, start_utc)) WITHOUT ROWID;
            CREATE TABLE slot_nodes (
                widget TEXT NOT NULL, start_utc INTEGER NOT NULL, node TEXT NOT NULL, \(accountsDeclared),
                PRIMARY KEY (widget, start_utc, node)) WITHOUT ROWID;
            """
        ]
    }

    static var version: Int64 { Int64(migrations.count) }

    /// Brings `database` to `version`, each step in a transaction of its own.
    static func migrate(_ database: SQLiteDatabase) throws(BookError) {
        let found = try database.integer("PRAGMA user_version")
        guard found <= version else {
            throw BookError(path: database.path, reason: "has schema version \(found), newer than this flowbridge's \(version): update flowbridge, or name another book")
        }
        for step in Int(found)..<migrations.count {
            try database.transaction { () throws(BookError) in
                try database.execute(migrations[step])
                try database.execute("PRAGMA user_version = \(step + 1)")
            }
        }
    }
}
