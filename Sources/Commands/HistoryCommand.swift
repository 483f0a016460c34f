import Configuration
import DayBook
import FlowCore
import FoundationEssentials
import Platform

/// `flowbridge history`: the day book's past periods, as a table, CSV or JSON; with `--tariff`,
/// what another tariff would have billed for the same slots, beside the bill as billed. The book
/// is only read (a running daemon may write it meanwhile).
struct HistoryCommand: Command {
    static let name = "history"
    static let abstract = "Reads the day book: each past day's (or slot's, hour's, month's) energy by account and money, as billed; with --tariff, what another tariff would have billed for the same slots, side by side with the difference. The book is only read."

    static let config = Option<String?>(
        "--config", alias: "-c", placeholder: "FILE",
        help: "the config: its book_file (else the book beside its state), timezone and billing_day (default /etc/flowbridge/config.yaml, unless --book is given: then the system's zone and billing day 1)")
    static let book = Option<String?>("--book", placeholder: "FILE", help: "the day book to read instead of the config's")
    static let period = Option<String>(
        "--period", placeholder: "P", help: "which days: \(BookPeriod.words)", default: "month", shownDefault: "month"
    ) { $0 }
    static let grouping = Option<BookGrouping>(
        "--by", placeholder: "slot|hour|day|month", help: "one row per 15-minute slot, hour, local day or month", default: .day,
        shownDefault: "day"
    ) { text throws(UsageError) in
        guard let grouping = BookGrouping(rawValue: text) else { throw UsageError("--by takes slot, hour, day or month, not '\(text)'") }
        return grouping
    }
    static let format = Option<HistoryFormat>(
        "--format", placeholder: "table|csv|json", help: "a table to read, CSV with a header, or JSON", default: .table, shownDefault: "table"
    ) { text throws(UsageError) in
        guard let format = HistoryFormat(rawValue: text) else { throw UsageError("--format takes table, csv or json, not '\(text)'") }
        return format
    }
    static let tariff = Option<String?>(
        "--tariff", placeholder: "OTHER.yaml",
        help: "a file with a tariff: section (fixed prices, time-of-use zones, or a price source given with --prices): what it would have billed, beside the bill, and the difference")
    static let prices = Option<String?>(
        "--prices", placeholder: "FILE.csv",
        help: "with --tariff: the past prices of the price sources it names, a CSV with the header start,end and a column per source (each row the price per kWh before fees and VAT, from start to end)")
    static var options: [any OptionDeclaration] { [config, SharedOptions.state, book, period, grouping, format, tariff, prices] }

    let configPath: String?
    let stateOverride: String?
    let bookOverride: String?
    let periodText: String
    let grouping: BookGrouping
    let format: HistoryFormat
    let tariffPath: String?
    let pricesPath: String?

    init(parsing arguments: Arguments) throws(UsageError) {
        configPath = try arguments.value(Self.config)
        stateOverride = try arguments.value(SharedOptions.state)
        bookOverride = try arguments.value(Self.book)
        periodText = try arguments.value(Self.period)
        grouping = try arguments.value(Self.grouping)
        format = try arguments.value(Self.format)
        tariffPath = try arguments.value(Self.tariff)
        pricesPath = try arguments.value(Self.prices)
        if pricesPath != nil, tariffPath == nil { throw UsageError("--prices prices another tariff: give it with --tariff") }
    }

    func run() -> ExitStatus {
        var zone: any LocalTimeZone = SystemTimeZone.system
        var billingDay = 1
        var bookPath = bookOverride
        if configPath != nil || bookOverride == nil {
            let path = configPath ?? "/etc/flowbridge/config.yaml"
            let context = ConfigContext.process(stateOverride: stateOverride)
            guard let config = DaemonConfig.loadReporting(path) else { return .config }
            zone = config.zone
            billingDay = config.billingDay
            bookPath = bookPath ?? context.bookPath(configured: config.bookFile, statePath: context.statePath(configured: config.stateFile))
        }
        guard let bookPath else { return .config }
        let today = zone.localDate(at: Date())
        guard let period = BookPeriod.parse(periodText, today: today, billingDay: billingDay) else {
            return Self.usageFailure("--period takes \(BookPeriod.words), not '\(periodText)'")
        }
        var repricing: BookRepricing?
        if let tariffPath {
            var prices: [String: PriceSchedule] = [:]
            if let pricesPath {
                let bytes: [UInt8]
                do { bytes = try FileIO.read(pricesPath, limit: PriceFile.maxBytes) } catch {
                    StandardError.print("flowbridge: --prices \(error)")
                    return .noInput
                }
                do { prices = try PriceFile(csv: String(decoding: bytes, as: UTF8.self)).schedules } catch {
                    StandardError.print("flowbridge: --prices \(pricesPath): \(error)")
                    return .dataError
                }
            }
            do {
                repricing = try BookRepricing(tariff: TariffConfig.load(path: tariffPath, priceLists: Array(prices.keys)), prices: prices)
            } catch {
                StandardError.print("flowbridge: --tariff \(error)")
                if pricesPath == nil { StandardError.print("(a price source's past prices come with --prices FILE.csv, a column named after it)") }
                return .config
            }
        }
        do {
            let book = try DayBook(path: bookPath, create: false, readOnly: true)
            let rows = try book.rows(of: period, by: grouping, zone: zone)
            let other = try repricing?.rows(of: period, by: grouping, in: book, zone: zone)
            let report = HistoryReport(period: period, rows: rows, other: other, zone: zone)
            print(report.text(format), terminator: "")
            return .success
        } catch {
            StandardError.print("flowbridge: \(error)")
            return error.code == 14 ? .noInput : .dataError  // SQLITE_CANTOPEN: no book there
        }
    }
}

/// How `history` prints.
enum HistoryFormat: String, Sendable {
    case table, csv, json
}
