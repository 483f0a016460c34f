import FlowCore
import Rendering

/// The day book's periods as bars: one per period, the home's consumption its height, the net cost
/// under it; and the same rows as a table. Drawn with SVG attributes only (the page's policy
/// allows no inline style).
struct PeriodBars {
    let rows: [PeriodRows.Row]
    let currencyCode: String?

    static let height = 160.0
    static let barWidth = 22.0

    func svg() -> String {
        guard !rows.isEmpty else { return "<p>nothing in the book yet</p>\n" }
        let most = max(rows.map { $0.accountsKWh[.consumption] ?? 0 }.max() ?? 0, 0.001)
        let width = Double(rows.count) * (Self.barWidth + 4) + 8
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(Self.height + 40))\" role=\"img\">"
        for (index, row) in rows.enumerated() {
            let energy = row.accountsKWh[.consumption] ?? 0
            let barHeight = (energy / most) * Self.height
            let x = 4 + Double(index) * (Self.barWidth + 4)
            svg += "<rect x=\"\(x)\" y=\"\(Self.height - barHeight)\" width=\"\(Self.barWidth)\" height=\"\(barHeight)\" fill=\"#3b82c4\">"
            svg += "<title>\(Markup.escape(row.period)): \(DisplayNumber.fixed(energy, decimals: 1)) kWh\(costText(row).map { ", " + $0 } ?? "")</title></rect>"
            svg += "<text x=\"\(x + Self.barWidth / 2)\" y=\"\(Self.height + 14)\" font-size=\"9\" text-anchor=\"middle\">\(Markup.escape(String(row.period.suffix(2))))</text>"
            if let cost = row.netCost {
                svg += "<text x=\"\(x + Self.barWidth / 2)\" y=\"\(Self.height + 30)\" font-size=\"8\" text-anchor=\"middle\">\(DisplayNumber.fixed(cost, decimals: 2))</text>"
            }
        }
        return svg + "</svg>\n"
    }

    private func costText(_ row: PeriodRows.Row) -> String? {
        row.netCost.map { "\(DisplayNumber.fixed($0, decimals: 2)) \(Markup.escape(currencyCode ?? ""))" }
    }

    /// The rows as a table: each account and the net cost.
    static func table(_ rows: [PeriodRows.Row], currencyCode: String?, id: String) -> String {
        guard !rows.isEmpty else { return "" }
        let accounts = EnergyAccount.allCases.filter { account in rows.contains { $0.accountsKWh[account] != nil } }
        var html = "<table id=\"\(id)\"><tr><th>period</th>" + accounts.map { "<th>\($0) kWh</th>" }.joined()
        html += "<th>net cost\(currencyCode.map { " " + Markup.escape($0) } ?? "")</th></tr>\n"
        for row in rows {
            html += "<tr><td>\(Markup.escape(row.period))</td>"
            html += accounts.map { "<td class=\"n\">\(row.accountsKWh[$0].map { DisplayNumber.fixed($0, decimals: 2) } ?? "–")</td>" }.joined()
            html += "<td class=\"n\">\(row.netCost.map { DisplayNumber.fixed($0, decimals: 2) } ?? "–")</td></tr>\n"
        }
        return html + "</table>\n"
    }
}
