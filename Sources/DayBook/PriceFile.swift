import FlowCore
import FoundationEssentials

/// Past prices a person gives `history --tariff` for the price sources the other tariff names
/// (a dynamic tariff's spot prices, downloaded as CSV): the book keeps each slot's price as billed,
/// fees and VAT in, not the source's.
///
/// A CSV with a header `start,end,NAME…`: one column per price source, each row the base price per
/// kWh (before the tariff's fees and VAT, in its currency) in force from `start` to `end`. Times as
/// a schedule's slots have them (RFC 3339 with a zone, or Unix seconds), each row judged as a
/// schedule payload's slot is (`ScheduleFormat.slot`); an empty cell is no price then. Rows need not
/// be sorted; within a column they may not overlap.
public struct PriceFile: Sendable, Equatable {
    /// Each column's prices, by the price source's name.
    public let schedules: [String: PriceSchedule]

    /// A year of 15-minute prices, three times over: more is no price list.
    static let maxRows = 105_120
    /// The file that holds as many rows, each with a few columns.
    public static let maxBytes = 32 << 20

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int?
        public var message: String
        public var description: String { line.map { "line \($0): \(message)" } ?? message }
    }

    public init(csv text: String) throws(Problem) {
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated().map { ($0.offset + 1, $0.element) }
        lines.removeAll { $0.1.allSatisfy(\.isWhitespace) }
        guard let header = lines.first else { throw Problem(line: nil, message: "no header (start,end,NAME…)") }
        let names = Self.fields(header.1)
        guard names.count >= 3, names[0] == "start", names[1] == "end" else {
            throw Problem(line: header.0, message: "the header is '\(PrintableText.escaped(String(header.1.prefix(80))))', not start,end and a price source's name per column")
        }
        guard lines.count - 1 <= Self.maxRows else { throw Problem(line: nil, message: "\(lines.count - 1) rows are more than the \(Self.maxRows) a price list may hold") }
        var slots = Array(repeating: [PriceSlot](), count: names.count - 2)
        for (number, line) in lines.dropFirst() {
            let fields = Self.fields(line)
            guard fields.count == names.count else { throw Problem(line: number, message: "\(fields.count) fields, where the header has \(names.count)") }
            for column in 2..<names.count {
                switch ScheduleFormat.slot(start: fields[0], end: fields[1], price: fields[column]) {
                case .failure(let error): throw Problem(line: number, message: "\(names[column]): \(error)")
                case .success(let slot):
                    guard let price = slot.price else { continue }
                    guard abs(price) <= TariffConfig.largestPricePerKWh else {
                        throw Problem(line: number, message: "\(names[column]): \(JSONValue.format(price)) per kWh is beyond any tariff's price")
                    }
                    slots[column - 2].append(PriceSlot(start: slot.start, end: slot.end, basePerKWh: price))
                }
            }
        }
        var schedules: [String: PriceSchedule] = [:]
        for (column, name) in names.dropFirst(2).enumerated() {
            let sorted = slots[column].sorted { $0.start < $1.start }
            for (earlier, later) in zip(sorted, sorted.dropFirst()) where earlier.end > later.start {
                throw Problem(line: nil, message: "\(name): the prices from \(RFC3339.format(earlier.start)) and from \(RFC3339.format(later.start)) overlap")
            }
            schedules[name] = PriceSchedule(slots: sorted)
        }
        self.schedules = schedules
    }

    /// A line's comma-separated fields, without the spaces and quotes around them (prices and
    /// times hold no commas).
    static func fields(_ line: Substring) -> [String] {
        line.split(separator: ",", omittingEmptySubsequences: false).map { field in
            let unpadded = field.drop { $0.isWhitespace || $0 == "\"" }
            return String(unpadded.dropLast(unpadded.reversed().prefix { $0.isWhitespace || $0 == "\"" }.count))
        }
    }
}
