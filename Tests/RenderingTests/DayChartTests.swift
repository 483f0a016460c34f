import FlowCore
import Foundation
@testable import Rendering
import Testing

/// Central European time with its DST switches of 2026 (29 March, 25 October): enough zone rules
/// to draw a 23-hour and a 25-hour day without the system's tzdata.
struct CentralEurope2026: LocalTimeZone {
    static let summerStart = RFC3339.parse("2026-03-29T01:00:00Z")!
    static let summerEnd = RFC3339.parse("2026-10-25T01:00:00Z")!
    var identifier: String { "Europe/Berlin" }
    func utcOffsetSeconds(at instant: Date) -> Int { instant >= Self.summerStart && instant < Self.summerEnd ? 7200 : 3600 }
}

@Suite struct DayChartTests {
    /// A push of a flow document at a local time of 2026-06-01 (UTC+2).
    struct Push: Sendable {
        var at: String
        var flow: FlowContent
    }

    static func flow(solar: Double?, home: Double, battery: Double?, grid: Double, unit: String? = "W") -> FlowContent {
        FlowContent(
            unit: unit, inputs: solar.map { [FlowNode(name: "Solar", rate: $0, color: "yellow")] },
            output: FlowNode(name: "Home", rate: home), storage: battery.map { FlowNode(name: "Battery", rate: $0, level: 50, color: "green") },
            exchange: FlowNode(name: "Grid", rate: grid, color: "gray"))
    }

    struct DayCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var pushes: [Push]
        var nodes: [String]
        /// Lines broken where a slot left the document.
        var segments: [String: Int] = [:]
        var unit = "kW"
    }

    static let days: [DayCase] = [
        DayCase(
            testDescription: "a sunny day: export and charging below and above zero",
            pushes: [
                Push(at: "2026-06-01T00:00:00+02:00", flow: flow(solar: 0, home: 300, battery: -250, grid: 50)),
                Push(at: "2026-06-01T08:00:00+02:00", flow: flow(solar: 2500, home: 500, battery: 1500, grid: -500)),
                Push(at: "2026-06-01T13:00:00+02:00", flow: flow(solar: 6200, home: 700, battery: 0, grid: -5500)),
                Push(at: "2026-06-01T21:30:00+02:00", flow: flow(solar: 0, home: 1200, battery: -1150, grid: 50)),
            ],
            nodes: ["Solar", "Home", "Battery", "Grid"]),
        DayCase(
            testDescription: "a night without sun: every value zero or above",
            pushes: [
                Push(at: "2026-06-01T01:00:00+02:00", flow: flow(solar: nil, home: 0, battery: nil, grid: 0)),
                Push(at: "2026-06-01T02:00:00+02:00", flow: flow(solar: nil, home: 0, battery: nil, grid: 0)),
            ],
            nodes: ["Home", "Grid"]),
        DayCase(
            testDescription: "the battery cleared for an hour: its line breaks",
            pushes: [
                Push(at: "2026-06-01T10:00:00+02:00", flow: flow(solar: 1000, home: 400, battery: 600, grid: 0)),
                Push(at: "2026-06-01T11:00:00+02:00", flow: flow(solar: 1000, home: 400, battery: nil, grid: -600)),
                Push(at: "2026-06-01T12:00:00+02:00", flow: flow(solar: 1000, home: 400, battery: 300, grid: -300)),
            ],
            nodes: ["Solar", "Home", "Battery", "Grid"], segments: ["Battery": 2, "Solar": 1]),
        DayCase(
            testDescription: "a widget in kW is drawn in kW",
            pushes: [
                Push(at: "2026-06-01T09:00:00+02:00", flow: flow(solar: 3.2, home: 1, battery: 0.8, grid: -1.4, unit: "kW")),
                Push(at: "2026-06-01T09:30:00+02:00", flow: flow(solar: 3.3, home: 1, battery: 0.8, grid: -1.5, unit: "kW")),
            ],
            nodes: ["Solar", "Home", "Battery", "Grid"]),
    ]

    /// One series per node, named as the document names it, with points in time order; the value
    /// axis covers every value (and 0); the SVG draws one group per series inside the plot.
    @Test(arguments: days)
    func oneSeriesPerNodeInTimeOrder(day: DayCase) throws {
        var history = PowerHistory(zone: CentralEurope2026())
        for push in day.pushes { history.record(push.flow, held: [], at: RFC3339.parse(push.at)!) }
        let charts = history.charts(title: "Power", through: nil)
        let chart = try #require(charts.first)
        #expect(charts.count == 1)
        #expect(chart.day.date == CivilDate(year: 2026, month: 6, day: 1))
        #expect(chart.unit == day.unit)
        #expect(chart.series.map(\.name) == day.nodes)
        let divisor = day.pushes[0].flow.unit == "W" ? 1000.0 : 1
        for series in chart.series {
            let samples = series.samples
            #expect(zip(samples, samples.dropFirst()).allSatisfy { $0.at <= $1.at }, "\(series.name) in time order")
            #expect(samples.allSatisfy { chart.axis.lower <= $0.value && $0.value <= chart.axis.upper })
            #expect(series.segments.count == day.segments[series.name] ?? 1)
            // Every pushed value is on the line.
            let pushed = day.pushes.compactMap { push in push.flow.node(named: series.name)?.rate.map { $0 / divisor } }
            #expect(Set(pushed).isSubset(of: Set(samples.map(\.value))))
        }
        #expect(chart.axis.lower <= 0 && chart.axis.upper >= 0)
        let svg = try SVGTree.parse(chart.svg())
        let groups = svg.all("g", class: "series")
        #expect(groups.map { $0.attributes["data-name"] } == day.nodes)
        for group in groups {
            let xs = group.all("polyline").flatMap { $0.points().map(\.x) }
            #expect(zip(xs, xs.dropFirst()).allSatisfy { $0 <= $1 + 0.01 }, "drawn left to right")
            for y in group.all("polyline").flatMap({ $0.points().map(\.y) }) { #expect((91.9...362.1).contains(y)) }
        }
        #expect(svg.all("line", class: "zero").count == 1)
        let legend = svg.all("g", class: "legend-item").flatMap(\.texts)
        #expect(legend == chart.series.map(\.legend))
        #expect(legend.contains { $0.hasPrefix("Grid (+ importing") })
    }

    /// The y-range covers the data with round ticks: the largest export and the largest import fit.
    @Test func theValueAxisCoversTheData() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        history.record(Self.flow(solar: 7340, home: 200, battery: nil, grid: -7140), held: [], at: RFC3339.parse("2026-06-01T12:00:00Z")!)
        history.record(Self.flow(solar: 0, home: 9870, battery: nil, grid: 9870), held: [], at: RFC3339.parse("2026-06-01T18:00:00Z")!)
        let axis = try #require(history.charts(title: "Power", through: nil).first?.axis)
        #expect(axis.lower <= -7.14 && axis.upper >= 9.87)
        #expect(axis.lower > -7.14 - axis.step && axis.upper < 9.87 + axis.step)
        #expect([1.0, 2, 2.5, 5].contains(axis.step))
    }

    /// The time axis is the local day: 00:00 to 24:00, the last push drawn on to when the replay
    /// stopped; on a 23-hour day the labels show the jump.
    @Test(arguments: [
        ("2026-06-01T06:00:00+02:00", "2026-06-01T18:00:00+02:00", 24.0, ["00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00", "24:00"]),
        ("2026-03-29T06:00:00+02:00", "2026-03-29T18:00:00+02:00", 23, ["00:00", "04:00", "07:00", "10:00", "13:00", "16:00", "19:00", "22:00", "24:00"]),
        ("2026-10-25T06:00:00+01:00", "2026-10-25T18:00:00+01:00", 25, ["00:00", "02:00", "05:00", "08:00", "11:00", "14:00", "17:00", "20:00", "23:00", "24:00"]),
    ])
    func theTimeAxisIsTheLocalDay(first: String, end: String, hours: Double, labels: [String]) throws {
        var history = PowerHistory(zone: CentralEurope2026())
        history.record(Self.flow(solar: 100, home: 100, battery: nil, grid: 0), held: [], at: RFC3339.parse(first)!)
        let chart = try #require(history.charts(title: "Power", through: RFC3339.parse(end)!).first)
        #expect(chart.day.lengthHours == hours)
        #expect(chart.series[0].samples.map(\.at) == [RFC3339.parse(first)!, RFC3339.parse(end)!])
        let svg = try SVGTree.parse(chart.svg())
        #expect(svg.all("text", class: "hour").map(\.content) == labels)
    }

    /// A trace across midnight draws a chart per day; the second starts with what the widget showed
    /// at midnight, and the first ends there.
    @Test func aChartPerDayAcrossMidnight() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        history.record(Self.flow(solar: nil, home: 400, battery: nil, grid: 400), held: [], at: RFC3339.parse("2026-06-01T22:00:00+02:00")!)
        history.record(Self.flow(solar: nil, home: 300, battery: nil, grid: 300), held: [], at: RFC3339.parse("2026-06-02T01:00:00+02:00")!)
        let charts = history.charts(title: "Power", through: RFC3339.parse("2026-06-02T02:00:00+02:00")!)
        #expect(charts.map(\.day.date.description) == ["2026-06-01", "2026-06-02"])
        let midnight = RFC3339.parse("2026-06-02T00:00:00+02:00")!
        #expect(charts[0].series.first { $0.name == "Home" }?.samples.last == DayChart.Sample(at: midnight, value: 0.4))
        #expect(charts[1].series.first { $0.name == "Home" }?.samples.first == DayChart.Sample(at: midnight, value: 0.4))
        #expect(charts[1].series.first { $0.name == "Home" }?.samples.last?.value == 0.3)
    }

    /// A daemon keeps only today's pushes, and the last one before its midnight (what the widget
    /// showed then): each push lets go of the days before its own, whose bounds are looked up
    /// once per day, not per push.
    @Test func aDaemonKeepsTodaysPushesAndWhatMidnightShowed() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        func push(home: Double, at time: String) {
            let at = RFC3339.parse(time)!
            history.recordToday(Self.flow(solar: nil, home: home, battery: nil, grid: home), held: [], at: at)
        }
        func home(_ charts: [DayChart], _ index: Int) -> [DayChart.Sample] { charts[index].series.first { $0.name == "Home" }?.samples ?? [] }
        push(home: 500, at: "2026-06-01T20:00:00+02:00")
        push(home: 400, at: "2026-06-01T22:00:00+02:00")
        push(home: 300, at: "2026-06-02T01:00:00+02:00")
        push(home: 200, at: "2026-06-02T03:00:00+02:00")
        var charts = history.charts(title: "Power", through: RFC3339.parse("2026-06-02T04:00:00+02:00")!)
        #expect(charts.map(\.day.date.description) == ["2026-06-01", "2026-06-02"])
        #expect(home(charts, 0).first == DayChart.Sample(at: RFC3339.parse("2026-06-01T22:00:00+02:00")!, value: 0.4))
        #expect(home(charts, 1).map(\.value).contains(0.3))
        push(home: 100, at: "2026-06-03T00:30:00+02:00")
        charts = history.charts(title: "Power", through: RFC3339.parse("2026-06-03T01:00:00+02:00")!)
        #expect(charts.map(\.day.date.description) == ["2026-06-02", "2026-06-03"])
        #expect(home(charts, 0).first == DayChart.Sample(at: RFC3339.parse("2026-06-02T03:00:00+02:00")!, value: 0.2))
        #expect(home(charts, 1).first == DayChart.Sample(at: RFC3339.parse("2026-06-03T00:00:00+02:00")!, value: 0.2))
        #expect(home(charts, 1).last?.value == 0.1)
    }

    /// Every line its own color: the gray a held node is sent and a color two nodes share are replaced.
    @Test func everyLineHasItsOwnColor() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        let flow = FlowContent(
            unit: "W", inputs: [FlowNode(name: "East", rate: 100, color: "yellow"), FlowNode(name: "West", rate: 200, color: "yellow")],
            output: FlowNode(name: "Home", rate: 300, color: "gray"))
        history.record(flow, held: [.output], at: RFC3339.parse("2026-06-01T12:00:00Z")!)
        let colors = try #require(history.charts(title: "Power", through: nil).first).series.map(\.color)
        #expect(Set(colors).count == 3)
        #expect(!colors.contains(WidgetColor.gray))
    }

    /// A day of pushes every 10 s draws with about one point per pixel column, and the averaged line
    /// keeps the day's energy: its area equals that of the pushed steps.
    @Test func aBusyDayDrawsOnePointPerColumn() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        let start = RFC3339.parse("2026-06-01T00:00:00+02:00")!
        for step in 0..<8640 {
            let rate = Double((step * 37) % 1000)
            history.record(FlowContent(unit: "W", output: FlowNode(name: "Home", rate: rate)), held: [], at: start.addingTimeInterval(Double(step) * 10))
        }
        let chart = try #require(history.charts(title: "Power", through: start.addingTimeInterval(86_400)).first)
        let svg = try SVGTree.parse(chart.svg())
        let points = try #require(svg.all("g", class: "series").first?.all("polyline").first?.points())
        #expect(points.count < 720)
        func area(_ points: [(x: Double, y: Double)]) -> Double {
            zip(points, points.dropFirst()).map { (362 - $0.y + 362 - $1.y) / 2 * ($1.x - $0.x) }.reduce(0, +)
        }
        let steps = chart.series[0].samples.map { (x: 70 + 700 * $0.at.timeIntervalSince(start) / 86_400, y: 362 - 270 * ($0.value - chart.axis.lower) / (chart.axis.upper - chart.axis.lower)) }
        #expect(abs(area(points) - area(steps)) / area(steps) < 0.01)
    }
}

/// A day of pushes far more often than the chart has pixel columns, as a flood of readings or a
/// push a second makes them.
struct BusyDay: Sendable, CustomTestStringConvertible {
    var testDescription: String
    /// Local midnight, and the day's length.
    var start: String
    var hours: Double
    /// The time of push `step`, in seconds after midnight.
    var time: @Sendable (Int) -> Double
    /// Lines broken where a slot left the document and came back.
    var breaks = 0
    var flow: @Sendable (Int) -> FlowContent

    static let cases: [BusyDay] = [
        BusyDay(testDescription: "a push every 2 s", start: "2026-06-01T00:00:00+02:00", hours: 24, time: { Double($0) * 2 }) { step in
            FlowContent(unit: "W", output: FlowNode(name: "Home", rate: Double((step * 37) % 1000)))
        },
        BusyDay(
            testDescription: "a spike, and the grid cleared for ten minutes", start: "2026-06-01T00:00:00+02:00", hours: 24,
            time: { Double($0) * 3 }, breaks: 1
        ) { step in
            let home = step == 9_001 ? 9_000 : 300 + Double(step % 50) * 10
            return FlowContent(
                unit: "W", output: FlowNode(name: "Home", rate: home),
                exchange: (12_000..<12_200).contains(step) ? nil : FlowNode(name: "Grid", rate: home - Double(step % 700)))
        },
        BusyDay(
            testDescription: "October's 25-hour day in bursts: five pushes a millisecond apart every 10 s",
            start: "2026-10-25T00:00:00+02:00", hours: 25, time: { Double($0 / 5) * 10 + Double($0 % 5) / 1000 }
        ) { step in
            FlowContent(
                unit: "W", inputs: [FlowNode(name: "Solar", rate: Double(step % 3_000))], output: FlowNode(name: "Home", rate: 500),
                storage: FlowNode(name: "Battery", rate: Double(step % 5) * 400 - 800))
        },
    ]
}

extension DayChartTests {
    /// A column keeps three pushes at most, and the day draws as it would from every push: the
    /// same value axis, the same lines within a hundredth of a pixel (the SVG's precision).
    @Test(arguments: BusyDay.cases)
    func aBusyDayKeepsThreePushesAColumnAndDrawsAsEveryPushWould(day: BusyDay) throws {
        let midnight = try #require(RFC3339.parse(day.start))
        let end = midnight.addingTimeInterval(day.hours * 3600)
        var history = PowerHistory(zone: CentralEurope2026())
        var every: [PowerHistory.Push] = []
        var step = 0
        while midnight.addingTimeInterval(day.time(step)) < end {
            let at = midnight.addingTimeInterval(day.time(step))
            let flow = day.flow(step)
            history.recordToday(flow, held: [], at: at)
            var push = PowerHistory.Push(at: at)
            flow.forEachNode { place, node in push.setRate(node.rate!, at: place.index) }
            every.append(push)
            step += 1
        }
        // Three a column, and three more for each time the places pushed changed.
        #expect(history.pushes.count <= 3 * 701 + 3 * 2)
        #expect(every.count > 10 * history.pushes.count)

        let kept = try #require(history.charts(title: "Power", through: end).first)
        #expect(kept.day.start == midnight && kept.day.end == end)
        let fromEvery = DayChart(title: "Power", day: kept.day, history: history, events: every, until: end)
        let everyValue = every.flatMap { push in (0..<6).compactMap { push[$0] } }.map { $0 / 1000 }
        #expect(kept.axis == DayChart.Axis(covering: everyValue))
        #expect(fromEvery.axis == kept.axis)
        func lines(_ chart: DayChart) throws -> [[(x: Double, y: Double)]] {
            try SVGTree.parse(chart.svg()).all("g", class: "series").flatMap { $0.all("polyline").map { $0.points() } }
        }
        let drawn = try lines(kept)
        let expected = try lines(fromEvery)
        #expect(drawn.count == expected.count && drawn.count == kept.series.count + day.breaks)
        for (line, wanted) in zip(drawn, expected) {
            #expect(line.count == wanted.count)
            let apart = zip(line, wanted).map { max(abs($0.x - $1.x), abs($0.y - $1.y)) }.max() ?? 0
            #expect(apart <= 0.0101)
        }
    }
}

extension DayChartTests {
    /// A wall clock stepped back inside a column: the time that went back weighs nothing, so no
    /// mean leaves the rates that were pushed (weighed as negative time, the mean below was 660 W).
    @Test func aTimeThatWentBackWeighsNothing() throws {
        var history = PowerHistory(zone: CentralEurope2026())
        let noon = try #require(RFC3339.parse("2026-06-01T12:00:00+02:00"))
        for (seconds, rate) in [(0.0, 100.0), (10, 100), (2, 500), (30, 100)] {
            history.record(FlowContent(unit: "W", output: FlowNode(name: "Home", rate: rate)), held: [], at: noon.addingTimeInterval(seconds))
        }
        let kept = history.pushes.compactMap { $0[NodePlace.output.index] }
        #expect(kept.count == 3)
        #expect(kept.allSatisfy { (100...500).contains($0) })
    }
}

extension FlowContent {
    func node(named name: String) -> FlowNode? {
        ((inputs ?? []) + [output, storage, exchange].compactMap { $0 }).first { $0.name == name }
    }
}
