import FlowCore
import Foundation
import Rendering
import Testing

@Suite struct ProgressPictureTests {
    struct BarCase: Sendable, CustomTestStringConvertible {
        var value: Double?
        var start: String?
        var end: String?
        var at: String?
        var percent: String
        var fraction: Double
        var testDescription: String { "\(value.map { "\($0)" } ?? "no value") \(start ?? "") \(end ?? "") at \(at ?? "-") → \(percent)" }
    }

    static let bars: [BarCase] = [
        BarCase(value: 0.42, percent: "42%", fraction: 0.42),
        BarCase(value: 0, percent: "0%", fraction: 0),
        BarCase(value: 1, percent: "100%", fraction: 1),
        BarCase(value: 0.996, percent: "100%", fraction: 0.996),
        // A window: the bar follows the clock, and reads 100% once it has ended.
        BarCase(value: 0, start: "2027-05-10T22:00:00Z", end: "2027-05-11T00:00:00Z", at: "2027-05-10T22:30:00Z", percent: "25%", fraction: 0.25),
        BarCase(value: 0, start: "2027-05-10T22:00:00Z", end: "2027-05-11T00:00:00Z", at: "2027-05-11T08:00:00Z", percent: "100%", fraction: 1),
        BarCase(value: nil, start: "2027-05-10T22:00:00Z", end: "2027-05-11T00:00:00Z", at: "2027-05-10T21:00:00Z", percent: "0%", fraction: 0),
        // Without a time to place it, the window falls back to the value, as older widget builds do.
        BarCase(value: 0.6, start: "2027-05-10T22:00:00Z", end: "2027-05-11T00:00:00Z", percent: "60%", fraction: 0.6),
    ]

    @Test(arguments: bars)
    func theBarAndThePercentShowTheValue(bar: BarCase) throws {
        let progress = ProgressContent(shared: SharedContent(label: "Battery"), value: bar.value, startDate: bar.start, endDate: bar.end)
        let svg = try SVGTree.parse(ProgressPicture(progress, at: bar.at.flatMap(RFC3339.parse)).svg())
        #expect(svg.all("text", class: "percent").map(\.content) == [bar.percent])
        let track = try #require(svg.all("rect", class: "bar-track").first?.number("width"))
        let fill = try #require(svg.all("rect", class: "bar-fill").first?.number("width"))
        #expect(abs(fill / track - bar.fraction) < 0.001)
    }

    struct BelowCase: Sendable, CustomTestStringConvertible {
        var rows: [StatRow]?
        var trend: ProgressContent.Trend?
        var drawnRows: [[String]]
        var drawnTrend: String?
        var testDescription: String { "\(rows?.count ?? 0) rows, trend \(trend?.rawValue ?? "none")" }
    }

    static let below: [BelowCase] = [
        BelowCase(rows: nil, trend: .up, drawnRows: [], drawnTrend: "up"),
        BelowCase(rows: nil, trend: .down, drawnRows: [], drawnTrend: "down"),
        BelowCase(rows: nil, trend: .flat, drawnRows: [], drawnTrend: "flat"),
        BelowCase(rows: nil, trend: nil, drawnRows: [], drawnTrend: nil),
        // Stat rows take the trend's place; the first three are drawn.
        BelowCase(
            rows: [StatRow(label: "Acked", value: "6"), StatRow(label: "Total", value: "10"), StatRow(label: "Severity", value: "SEV-2")],
            trend: .up, drawnRows: [["Acked", "6"], ["Total", "10"], ["Severity", "SEV-2"]], drawnTrend: nil),
        BelowCase(
            rows: (1...6).map { StatRow(label: "Row \($0)", value: "\($0 * 10)", unit: $0 == 1 ? "kWh" : nil) }, trend: nil,
            drawnRows: [["Row 1", "10 kWh"], ["Row 2", "20"], ["Row 3", "30"]], drawnTrend: nil),
    ]

    @Test(arguments: below)
    func statRowsOrTheTrendUnderTheBar(case below: BelowCase) throws {
        let progress = ProgressContent(
            shared: SharedContent(label: "Pages", subtitle: "6 of 10 acked"), value: 0.6, trend: below.trend, statRows: below.rows)
        let svg = try SVGTree.parse(ProgressPicture(progress).svg())
        #expect(svg.all("g", class: "stat-row").map { $0.texts } == below.drawnRows)
        #expect(svg.all("g", class: "trend").map { $0.attributes["data-trend"] } == (below.drawnTrend.map { [$0] } ?? []))
        #expect(svg.all("text", class: "label").map(\.content) == ["Pages"])
        #expect(svg.all("text", class: "subtitle").map(\.content) == ["6 of 10 acked"])
    }

    @Test func progressTextIsEscaped() throws {
        let name = #"<b>"Ack" & 'go'</b>"#
        let progress = ProgressContent(
            shared: SharedContent(label: name, subtitle: name), value: 0.5, statRows: [StatRow(label: name, value: name, unit: "<%>")])
        let svg = try SVGTree.parse(WidgetPicture.svg(.progress(progress), held: .none))
        #expect(svg.all("b").isEmpty)
        #expect(svg.all("text", class: "stat-label").map(\.content) == [name])
        #expect(svg.all("text", class: "stat-value").map(\.content) == ["\(name) <%>"])
    }
}
