import FlowCore
import Foundation
import Rendering
import Testing

/// `PushSummary`: a push as one line a person reads, from the document the widget shows after it.
@Suite struct PushSummaryTests {
    static let zone = FixedOffsetZone(offsetSeconds: 7200)
    /// 12:41:07 at UTC+2.
    static let at = RFC3339.parse("2026-06-21T10:41:07Z")!

    /// The spec's own example (`spec/flow-template.txt`): exporting 1400 W while the battery fills.
    static let specExample = FlowContent(
        shared: SharedContent(label: "Power"), unit: "W",
        inputs: [FlowNode(name: "Solar", rate: 3200, total: 12.4, icon: "sun.max.fill", color: "yellow")],
        output: FlowNode(name: "Home", rate: 1000, total: 9.8, icon: "house.fill"),
        storage: FlowNode(name: "Battery", rate: 800, level: 76, icon: "battery.75percent", color: "green"),
        exchange: FlowNode(name: "Grid", rate: -1400, total: 3.1, icon: "bolt.fill", color: "cyan"))

    @Test func theSpecExampleReadsAsTheWidgetShowsIt() {
        #expect(
            PushSummary.line(widget: "power", document: .flow(Self.specExample), held: .none, at: Self.at, zone: Self.zone)
                == "12:41:07 power: Solar 3.2 kW → Home 1.0 kW, Battery +800 W 76%, Grid −1.4 kW export; today Solar 12.4 kWh, Home 9.8 kWh, Grid 3.1 kWh")
    }

    struct FlowCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var flow: FlowContent
        /// The places the engine marked held.
        var held: Set<NodePlace> = []
        var expected: String
    }

    static func node(_ name: String?, _ rate: Double?, total: Double? = nil, level: Double? = nil, color: String? = nil) -> FlowNode {
        FlowNode(name: name, rate: rate, total: total, level: level, color: color)
    }

    @Test(arguments: [
        FlowCase(
            testDescription: "night: the battery drains, the grid imports, the sun is down",
            flow: FlowContent(
                unit: "W", inputs: [node("Solar", 0, total: 14.8)], output: node("Home", 640),
                storage: node("Battery", -440, level: 31), exchange: node("Grid", 200, total: 0.4)),
            expected: "Solar 0 W → Home 640 W, Battery −440 W 31%, Grid +200 W import; today Solar 14.8 kWh, Grid 0.4 kWh"),
        FlowCase(
            testDescription: "idle: 0 carries no sign and the grid no direction",
            flow: FlowContent(unit: "W", output: node("Home", 0), storage: node("Battery", 0, level: 100), exchange: node("Grid", 4)),
            expected: "Home 0 W, Battery 0 W 100%, Grid +4 W import"),
        FlowCase(
            testDescription: "two inputs and no home meter: the production goes on to the rest without an arrow",
            flow: FlowContent(unit: "W", inputs: [node("Roof", 2150), node("Balcony", 380)], exchange: node("Grid", -1999.6)),
            expected: "Roof 2.2 kW + Balcony 380 W, Grid −2.0 kW export"),
        FlowCase(
            testDescription: "no names: the slots'; a held grid is marked",
            flow: FlowContent(unit: "W", inputs: [node(nil, 900)], output: node(nil, 300), exchange: node(nil, -600, color: "gray")),
            held: [.exchange], expected: "Input 900 W → Output 300 W, Exchange −600 W export (held)"),
        FlowCase(
            testDescription: "kW as the widget's unit, rates as the pictures print them",
            flow: FlowContent(unit: "kW", inputs: [node("Solar", 3.25, total: 0.22)], output: node("Home", 1)),
            expected: "Solar 3.3 kW → Home 1 kW; today Solar 0.22 kWh"),
        FlowCase(
            testDescription: "water: litres a minute, litres a day",
            flow: FlowContent(unit: "L/min", inputs: [node("Well", 12)], storage: node("Tank", -3.5, level: 40), exchange: node("Mains", 2, total: 120)),
            expected: "Well 12 L/min, Tank −3.5 L/min 40%, Mains +2 L/min import; today Mains 120.0 L"),
        FlowCase(testDescription: "nothing read yet", flow: FlowContent(unit: "W"), expected: "no readings yet"),
    ])
    func flowDocuments(_ example: FlowCase) {
        #expect(PushSummary.text(.flow(example.flow), held: HeldMark(nodes: example.held), at: Self.at, zone: Self.zone) == example.expected)
    }

    struct ProgressCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var progress: ProgressContent
        /// The engine marked the bar held.
        var isHeld = false
        var expected: String
    }

    @Test(arguments: [
        ProgressCase(
            testDescription: "a charging battery: its window advances the bar to 100% by the end",
            progress: ProgressContent(
                shared: SharedContent(label: "Battery"), value: 0.5, trend: .up,
                statRows: [StatRow(label: "Charging", value: "800", unit: "W"), StatRow(label: "Full in", value: "1 h 20 min")],
                startDate: "2026-06-21T09:41:07Z", endDate: "2026-06-21T11:41:07Z"),
            expected: "Battery 50% ↑ → 100% at 13:41; Charging 800 W, Full in 1 h 20 min"),
        ProgressCase(
            testDescription: "self-sufficiency, no trend",
            progress: ProgressContent(
                shared: SharedContent(label: "Self-sufficiency"), value: 0.873,
                statRows: [StatRow(label: "Home", value: "9.8", unit: "kWh"), StatRow(label: "From grid", value: "1.2", unit: "kWh")]),
            expected: "Self-sufficiency 87%; Home 9.8 kWh, From grid 1.2 kWh"),
        ProgressCase(
            testDescription: "a draining battery whose meter went silent: gray, held",
            progress: ProgressContent(shared: SharedContent(label: "Battery", accentColor: "gray"), value: 0.31, trend: .down),
            isHeld: true, expected: "Battery 31% ↓ (held)"),
        ProgressCase(testDescription: "no label, no trend", progress: ProgressContent(value: 1), expected: "100%"),
    ])
    func progressDocuments(_ example: ProgressCase) {
        #expect(PushSummary.text(.progress(example.progress), held: HeldMark(bar: example.isHeld), at: Self.at, zone: Self.zone) == example.expected)
    }

    /// The line's time is the push's in the zone given, and the fraction of a window is the one at
    /// that time: the same document an hour later reads further along.
    @Test func theTimeIsThePushsInTheZone() {
        let window = ProgressContent(value: 0, startDate: "2026-06-21T10:00:00Z", endDate: "2026-06-21T12:00:00Z")
        let later = Self.at.addingTimeInterval(3600)
        #expect(PushSummary.line(widget: "bar", document: .progress(window), held: .none, at: Self.at, zone: FixedOffsetZone()) == "10:41:07 bar: 34% → 100% at 12:00")
        #expect(PushSummary.line(widget: "bar", document: .progress(window), held: .none, at: later, zone: Self.zone) == "13:41:07 bar: 84% → 100% at 14:00")
    }

    /// The line's second is the one its push's `t` prints (`RFC3339.write`, to the millisecond),
    /// also in a second's last half-millisecond, which `t` prints as the next second.
    @Test(arguments: [(0.0, "12:41:07"), (0.4994, "12:41:07"), (0.9994, "12:41:07"), (0.9996, "12:41:08"), (0.99999, "12:41:08")])
    func theLinesSecondIsTheOneTPrints(fraction: Double, second: String) {
        let at = Self.at.addingTimeInterval(fraction)
        var t: [UInt8] = []
        RFC3339.write(at, utcOffsetSeconds: 7200, to: &t)
        let printed = String(decoding: t, as: UTF8.self)
        #expect(printed.hasPrefix("2026-06-21T\(second)"), "\(printed)")
        let line = PushSummary.line(widget: "power", document: .flow(Self.specExample), held: .none, at: at, zone: Self.zone)
        #expect(line.hasPrefix("\(second) power: "), "\(printed): \(line)")
    }
}
