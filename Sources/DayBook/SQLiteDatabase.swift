import CSQLite
import FoundationEssentials

/// Why the book could not be read or written: the file, and SQLite's own words for it.
public struct BookError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String
    /// SQLite's primary result code (SQLITE_FULL, SQLITE_BUSY, SQLITE_CORRUPT …), 0 when the
    /// problem is the book's own (a newer schema, a file that is no book).
    public var code: Int32

    public init(path: String, reason: String, code: Int32 = 0) {
        self.path = path
        self.reason = reason
        self.code = code
    }

    public var description: String { "the day book \(path) \(reason)" }
}

/// One open SQLite connection, owned by one thread at a time: the C handle at the edge, every
/// call's result checked and turned into a `BookError` that names the file.
final class SQLiteDatabase {
    let path: String
    private let handle: OpaquePointer

    /// Opens (`create`: and makes) the file. Busy for up to `busyMilliseconds` before SQLITE_BUSY:
    /// a `history` reading while the daemon writes waits a moment instead of failing.
    init(path: String, create: Bool, readOnly: Bool = false, busyMilliseconds: Int32 = 2_000) throws(BookError) {
        self.path = path
        var opened: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        let status = sqlite3_open_v2(path, &opened, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let opened else {
            let reason = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(opened)
            throw BookError(path: path, reason: "cannot be opened (\(reason))", code: status & 0xFF)
        }
        handle = opened
        sqlite3_busy_timeout(handle, busyMilliseconds)
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs statements that return nothing the caller reads (the schema, a PRAGMA that sets).
    func execute(_ sql: String) throws(BookError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard status == SQLITE_OK else {
            throw failure(status, message.map { String(cString: $0) })
        }
    }

    /// `body` inside one transaction: committed when it returns, rolled back when it throws. One
    /// transaction is one commit, one sync of the journal: a slot's rows cost one, not one each.
    func transaction<T>(_ body: () throws(BookError) -> T) throws(BookError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    func prepare(_ sql: String) throws(BookError) -> Statement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status, nil) }
        return Statement(database: self, handle: statement)
    }

    /// The first column of the first row of a query (a PRAGMA's value, a count).
    func integer(_ sql: String) throws(BookError) -> Int64 {
        let statement = try prepare(sql)
        return try statement.step() ? statement.integer(0) : 0
    }

    func failure(_ status: Int32, _ detail: String?) -> BookError {
        let text = detail ?? String(cString: sqlite3_errmsg(handle))
        return BookError(path: path, reason: "cannot be used: \(text)", code: status & 0xFF)
    }

    /// A prepared statement: values bound by position (1-based, as SQLite counts), rows stepped.
    final class Statement {
        private let database: SQLiteDatabase
        private let handle: OpaquePointer

        fileprivate init(database: SQLiteDatabase, handle: OpaquePointer) {
            self.database = database
            self.handle = handle
        }

        deinit { sqlite3_finalize(handle) }

        /// Binds `values` from the first parameter on; nil is NULL.
        func bind(_ values: [Value?]) throws(BookError) {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let status: Int32
                switch value {
                case nil: status = sqlite3_bind_null(handle, index)
                case .integer(let number): status = sqlite3_bind_int64(handle, index, number)
                case .real(let number): status = sqlite3_bind_double(handle, index, number)
                case .text(let text): status = sqlite3_bind_text(handle, index, text, -1, csqlite_transient())
                }
                guard status == SQLITE_OK else { throw database.failure(status, nil) }
            }
        }

        /// Runs a statement that returns no rows.
        func run(_ values: [Value?]) throws(BookError) {
            try bind(values)
            _ = try step()
        }

        /// The next row: true while there is one.
        func step() throws(BookError) -> Bool {
            let status = sqlite3_step(handle)
            switch status {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw database.failure(status, nil)
            }
        }

        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
        func real(_ column: Int32) -> Double? { isNull(column) ? nil : sqlite3_column_double(handle, column) }
        func text(_ column: Int32) -> String {
            sqlite3_column_text(handle, column).map { String(cString: $0) } ?? ""
        }
        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    }

    /// What a parameter takes.
    enum Value {
        case integer(Int64)
        case real(Double)
        case text(String)
    }
}
