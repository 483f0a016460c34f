import DayBook
import FlowCore
import FoundationEssentials

/// What `history` prints: the period's rows (and, with another tariff, its bill beside the one
/// billed), as a table for people, CSV with a header, or JSON. Energy and money go out at full
/// resolution in CSV and JSON (a reader sums them again), rounded in the table.
struct HistoryReport {
    let period: BookPeriod
    let rows: [BookRow]
    /// The same rows priced under another tariff; nil without `--tariff`.
    let other: [BookRow]?
    let zone: any LocalTimeZone

    /// The accounts any row has, in their usual order: a home without a battery gets no charge column.
    var accounts: [EnergyAccount] {
        EnergyAccount.allCases.filter { account in rows.contains { $0.accountsKWh[account] != nil } }
    }

    /// The currency the money columns are named with: the first row's that has money.
    var currency: Currency? { rows.lazy.compactMap(\.money?.currency).first }

    /// Each widget's rows added up.
    var totals: [BookRow] {
        DayBook.total(rows)
    }

    func text(_ format: HistoryFormat) -> String {
        switch format {
        case .table: table
        case .csv: csv
        case .json: json.description + "\n"
        }
    }

    // MARK: - CSV

    /// `start,end,widget,production_kWh,…,import_cost_EUR,…,net_cost_EUR,saved_EUR,hours`, and with
    /// another tariff its amounts (`other_net_cost_EUR`) and the difference to the bill.
    var csv: String {
        let code = currency?.code ?? "money"
        var header = ["start", "end", "widget"] + accounts.map { "\($0.rawValue)_kWh" }
        header += ["import_cost", "export_earnings", "standing_charge", "net_cost", "saved"].map { "\($0)_\(code)" }
        if other != nil {
            header += ["other_import_cost", "other_export_earnings", "other_standing_charge", "other_net_cost", "difference"].map { "\($0)_\(code)" }
            header.append("other_unpriced_kWh")
        }
        header.append("hours")
        var lines = [header.joined(separator: ",")]
        for (index, row) in rows.enumerated() {
            var fields = [time(row.start), time(row.end), Self.csvField(row.widget)]
            fields += accounts.map { row.accountsKWh[$0].map(JSONValue.format) ?? "" }
            fields += Self.amounts(row.money)
            if let other {
                let priced = other[index].money
                fields += Self.amounts(priced).prefix(4)
                fields.append(Self.difference(row.money, priced).map(JSONValue.format) ?? "")
                fields.append(priced.map { JSONValue.format($0.unpricedKWh.values.reduce(0, +)) } ?? "")
            }
            fields.append(JSONValue.format(row.hours))
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func amounts(_ money: BookMoney?) -> [String] {
        guard let money else { return ["", "", "", "", ""] }
        return [money.importCost, money.exportEarnings, money.standingCharge, money.netCost].map(JSONValue.format) + [money.saved.map(JSONValue.format) ?? ""]
    }

    /// The other tariff's bill minus the one billed: positive, it would have cost more.
    static func difference(_ billed: BookMoney?, _ other: BookMoney?) -> Double? {
        guard let billed, let other, billed.currency == other.currency else { return nil }
        return other.netCost - billed.netCost
    }

    /// A widget's name as a CSV field: quoted when it holds a comma, a quote or a line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }

    func time(_ instant: Date) -> String { RFC3339.format(instant, utcOffsetSeconds: zone.utcOffsetSeconds(at: instant)) }

    // MARK: - JSON

    var json: JSONValue {
        func object(_ row: BookRow, other: BookRow?) -> JSONValue {
            var members: [String: JSONValue] = [
                "start": .string(time(row.start)), "end": .string(time(row.end)), "label": .string(row.label), "widget": .string(row.widget),
                "hours": .number(row.hours), "days": .number(Double(row.dayCount)),
                "accounts_kWh": .object(Dictionary(uniqueKeysWithValues: row.accountsKWh.map { ($0.key.rawValue, JSONValue.number($0.value)) })),
            ]
            members["money"] = row.money.map(Self.json(of:))
            if let other {
                members["other_tariff"] = other.money.map(Self.json(of:))
                members["difference"] = Self.difference(row.money, other.money).map(JSONValue.number)
            }
            return .object(members)
        }
        let otherTotals = other.map { DayBook.total($0) }
        return .object([
            "period": .string(period.description),
            "rows": .array(rows.enumerated().map { object($1, other: other?[$0]) }),
            "total": .array(totals.enumerated().map { object($1, other: otherTotals?[$0]) }),
        ])
    }

    static func json(of money: BookMoney) -> JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(money.currency.code), "import_cost": .number(money.importCost), "export_earnings": .number(money.exportEarnings),
            "standing_charge": .number(money.standingCharge), "net_cost": .number(money.netCost),
        ]
        members["saved"] = money.saved.map(JSONValue.number)
        if !money.unpricedKWh.isEmpty {
            members["unpriced_kWh"] = .object(Dictionary(uniqueKeysWithValues: money.unpricedKWh.map { ($0.key.rawValue, JSONValue.number($0.value)) }))
        }
        return .object(members)
    }

    // MARK: - Table

    var table: String {
        guard !rows.isEmpty else { return "no days in the book for \(period)\n" }
        var header = ["", "widget"] + accounts.map { "\($0.rawValue) kWh" } + ["net cost"]
        if other != nil { header += ["other tariff", "difference"] }
        var lines = [header]
        func line(_ row: BookRow, label: String, other: BookRow?) -> [String] {
            var cells = [label, row.widget] + accounts.map { account in row.accountsKWh[account].map { Self.fixed($0, 3) } ?? "" }
            cells.append(row.money.map { $0.currency.text($0.netCost) } ?? "")
            if self.other != nil {
                cells.append(other?.money.map { $0.currency.text($0.netCost) } ?? "")
                cells.append(Self.difference(row.money, other?.money).flatMap { difference in row.money.map { $0.currency.text(difference) } } ?? "")
            }
            return cells
        }
        for (index, row) in rows.enumerated() { lines.append(line(row, label: row.label, other: other?[index])) }
        let otherTotals = other.map { DayBook.total($0) }
        for (index, total) in totals.enumerated() { lines.append(line(total, label: "total \(period)", other: otherTotals?[index])) }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        let table = lines.map { cells in
            cells.enumerated().map { column, cell in
                column < 2 ? cell.padding(to: widths[column]) : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
        // Energy the other tariff had no price for is in neither of its amounts: said, not hidden.
        let unpriced = (otherTotals ?? []).compactMap(\.money).map { $0.unpricedKWh.values.reduce(0, +) }.reduce(0, +)
        guard unpriced > 0 else { return table }
        return table + "the other tariff has no price for \(Self.fixed(unpriced, 3)) kWh (outside --prices): its bill leaves them out\n"
    }

    /// `value` with `decimals` digits after the point.
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        let scale = (0..<decimals).reduce(1.0) { product, _ in product * 10 }
        let scaled = Int((abs(value) * scale).rounded())
        let whole = scaled / Int(scale)
        let fraction = String(scaled % Int(scale))
        let sign = value < 0 && scaled > 0 ? "-" : ""
        return "\(sign)\(whole).\(String(repeating: "0", count: decimals - fraction.count))\(fraction)"
    }
}
