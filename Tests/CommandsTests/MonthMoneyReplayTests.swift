import Commands
import Configuration
import FlowCore
import Foundation
import ReplaySupport
import TestSupport
import Testing

/// The month's money on the phone, through `replay` over several days: a cost bar of `period:
/// month` or `billing` against its budget, and a flow widget's subtitle of the month's net cost.
/// The closed days are the engine's own, as the day book's are at a start.
@Suite struct MonthMoneyReplayTests: TariffHome {
    /// The grid read every 5 minutes through each of `days` (the last through its noon): 1 kW
    /// imported at 0.30 from 10:00 to 12:00 UTC, 0 W otherwise: 2 kWh, 0.60 a day.
    static func trace(_ days: [String]) -> [String] {
        lines(days.flatMap { day in
            let end = day == days.last ? time("\(day)T12:00:00Z") : time("\(day)T23:55:00Z")
            return minutes(from: time("\(day)T00:00:00Z"), to: end, every: 300) { at in
                (10 * 3600..<12 * 3600).contains(Int(at.timeIntervalSince(time("\(day)T00:00:00Z")))) ? 1000 : 0
            }
        })
    }

    static func home(period: String, budget: String) -> String {
        config(
            tariff: "  import: {price: 0.30}", subtitle: "{show: net_cost_month}",
            widgets: """
                  cost:
                    template: progress
                    progress: {of: cost, period: \(period), budget: \(budget)}
                    policy: {min_interval: 0s, settle: 0s}
                """) + "\nbilling_day: 15\n"
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var days: [String]
        var period: String
        var net: String
        var unit: String?
        var value: Double
        var month: String
        var testDescription: String { name }
    }

    /// Each day 0.60; the last day's noon is when the documents are read. The bar is net /
    /// budget (3.00) in whole percent.
    static let cases: [Case] = [
        // 05-30 and 05-31 are May's: June's first two days, 1.20, 0.4 of 3.00.
        Case(name: "the month: the days before it do not count", days: ["2026-05-30", "2026-05-31", "2026-06-01", "2026-06-02"],
             period: "month", net: "€1.20 of €3.00", unit: "this month", value: 0.4, month: "€1.20"),
        // The billing month from 2026-05-15 holds all four: 2.40, 0.8.
        Case(name: "the billing month from the 15th, across the month's end", days: ["2026-05-30", "2026-05-31", "2026-06-01", "2026-06-02"],
             period: "billing", net: "€2.40 of €3.00", unit: "this bill", value: 0.8, month: "€1.20"),
        // The 13th to the 16th of June: the month 2.40; the billing month from the 15th 1.20.
        Case(name: "the month from the 13th to the 16th", days: ["2026-06-13", "2026-06-14", "2026-06-15", "2026-06-16"],
             period: "month", net: "€2.40 of €3.00", unit: "this month", value: 0.8, month: "€2.40"),
        Case(name: "the billing month that began on the 15th", days: ["2026-06-13", "2026-06-14", "2026-06-15", "2026-06-16"],
             period: "billing", net: "€1.20 of €3.00", unit: "this bill", value: 0.4, month: "€2.40"),
        Case(name: "the day, as before", days: ["2026-06-13", "2026-06-14"], period: "day", net: "€0.60 of €3.00", unit: nil, value: 0.2, month: "€1.20"),
    ]

    @Test(arguments: cases)
    func theBarAndTheSubtitleOfThePeriod(_ test: Case) throws {
        let (lines, _) = try replay(config: Self.home(period: test.period, budget: "3"), trace: Self.trace(test.days))
        let cost = try #require(ProgressReplayTests.documents(of: "cost", in: lines).last?.content)
        // The period goes in the row's unit: the value keeps its 32 characters for the amounts.
        #expect(ProgressReplayTests.row(cost, 0) == .object(["label": "Net", "value": .string(test.net)].merging(test.unit.map { ["unit": .string($0)] } ?? [:]) { a, _ in a }))
        #expect(ProgressReplayTests.row(cost, 1)?["label"] == "Import")
        #expect(cost["value"]?.numberValue == test.value, "\(cost)")
        let flow = try #require(ProgressReplayTests.documents(of: "home", in: lines).last?.content)
        #expect(flow["subtitle"] == .string("Net this month \(test.month)"))
        try ProgressReplayTests.expectEveryDocumentValid(lines, widgets: ["home", "cost"])
    }

    /// The month's bar never falls back at midnight: the closed day leaves today's figures and
    /// joins the closed ones in one step (import only, so the net only rises).
    @Test func theMonthsBarNeverFallsAtMidnight() throws {
        let days = ["2026-06-13", "2026-06-14", "2026-06-15"]
        let (lines, _) = try replay(config: Self.home(period: "month", budget: "3"), trace: Self.trace(days), final: false)
        let values = ProgressReplayTests.documents(of: "cost", in: lines).compactMap { $0.content["value"]?.numberValue }
        #expect(values.count > 10)
        for (earlier, later) in zip(values, values.dropFirst()) { #expect(later >= earlier, "\(values)") }
        #expect(values.last == 0.6)
    }
}
