import FlowCore
import FoundationEssentials

/// The rates a flow widget was pushed, in order: what its day charts are drawn from.
///
/// A widget shows a document from its push until the next one, so a chart draws each node's rate
/// as steps: flat until the next push, then straight to the new value. That is what the phone
/// showed, not a guess between two readings. Only the rates are kept per push, inline (64 bytes a
/// push); names, colors and the unit are the latest the widget had.
///
/// The chart draws a pixel column (about two minutes of the day) as the mean of what the column
/// showed, so a column keeps at most three pushes of the same places: its first, one holding the
/// mean of the ones after it up to the latest, and the latest. A day then holds about 2,100
/// pushes (134 kB) however often the widget is pushed, where a push a second kept all 86,400
/// (5.5 MB by midnight, and a flood of readings as many as it pushed).
public struct PowerHistory: Sendable {
    public let zone: any LocalTimeZone

    /// One push: its time and the rate of each of the six places (`NodePlace.index`), nil where
    /// the document had no such node. The rates are stored in the push itself, not in an array of
    /// their own: an array is an allocation per push that the day keeps (about 150 bytes each, so
    /// a day of a push a second held 13 MB), where these add 56 bytes to the day's one array.
    struct Push: Sendable {
        var at: Date
        private var values = InlineArray<6, Double>(repeating: 0)
        /// Bit `index` set: `values[index]` is the place's rate.
        private var present: UInt8 = 0

        init(at: Date) { self.at = at }

        /// The rate of the place at `index` (`NodePlace.index`), nil where the document had none.
        subscript(index: Int) -> Double? { present & (1 << index) != 0 ? values[index] : nil }

        /// A bit per place that has a rate (`NodePlace.index`).
        var places: UInt8 { present }

        mutating func setRate(_ rate: Double, at index: Int) {
            values[index] = rate
            present |= 1 << index
        }

        /// Takes in `next` (same places), shown from its `at` until `end`: each rate becomes the
        /// mean of this push's, shown until `next.at`, and `next`'s, weighted by how long each
        /// was shown. The line's area over the two, the energy it draws, stays what it was. (A
        /// time that went back, a wall clock stepped back, weighs nothing rather than less.)
        mutating func absorb(_ next: Push, shownUntil end: Date) {
            let mine = max(0, next.at.timeIntervalSince(at))
            let theirs = max(0, end.timeIntervalSince(next.at))
            guard mine + theirs > 0 else { return }
            for index in 0..<6 where present & (1 << index) != 0 {
                values[index] = (values[index] * mine + next.values[index] * theirs) / (mine + theirs)
            }
        }
    }

    /// The pixel column of a day that a push falls in, with the places it has: pushes of one
    /// column and the same places draw as their mean.
    struct Column: Equatable {
        var day: Date
        var index: Int
        var places: UInt8
    }

    private(set) var pushes: [Push] = []
    /// The column of the last push, and where in `pushes` its run of pushes starts.
    private var column: (key: Column, start: Int)?
    /// Per local day (by its start, in order), the lowest and the highest rate pushed: the value
    /// axis covers them where a column's mean no longer holds them.
    private(set) var extremes: [(day: Date, rates: ClosedRange<Double>)] = []
    /// Per place (`NodePlace.index`): the node's latest name, and the first color it had while
    /// not held (a held node is sent gray, which would make every held line look alike). By
    /// index: as dictionaries, each push hashed every place twice.
    private(set) var names = InlineArray<6, String?>(repeating: nil)
    private(set) var colors = InlineArray<6, WidgetColor?>(repeating: nil)
    private(set) var unit: String?
    /// The local day `day(of:)` looked up last.
    private var keptDay: LocalDay?

    public init(zone: any LocalTimeZone) { self.zone = zone }

    /// Takes the whole document after a push at `at`, `held` the places the engine marked held in
    /// it. Pushes come in time order.
    public mutating func record(_ flow: FlowContent, held: Set<NodePlace>, at: Date) {
        var push = Push(at: at)
        var lowest = Double.infinity
        var highest = -Double.infinity
        flow.forEachNode { place, node in
            guard let rate = node.rate, rate.isFinite else { return }
            push.setRate(rate, at: place.index)
            lowest = min(lowest, rate)
            highest = max(highest, rate)
            names[place.index] = node.name ?? FlowPicture.defaultName(of: place, inputCount: flow.inputs?.count ?? 0)
            if colors[place.index] == nil, !held.contains(place), let color = WidgetColor(node.color) { colors[place.index] = color }
        }
        unit = flow.unit
        let day = day(of: at)
        if lowest <= highest {
            if let last = extremes.indices.last, extremes[last].day == day.start {
                let rates = extremes[last].rates
                extremes[last].rates = min(rates.lowerBound, lowest)...max(rates.upperBound, highest)
            } else {
                extremes.append((day.start, lowest...highest))
            }
        }
        let key = Column(day: day.start, index: Int(DayChart.xPosition(at, in: day).rounded(.down)), places: push.places)
        if let column, column.key == key, pushes.count - column.start == 3 {
            // The column's first push stays, the middle one takes in the latest, the new one is the latest.
            pushes[pushes.count - 2].absorb(pushes[pushes.count - 1], shownUntil: at)
            pushes[pushes.count - 1] = push
            return
        }
        if column?.key != key { column = (key, pushes.count) }
        pushes.append(push)
    }

    /// `record`, for a daemon, which keeps only today's pushes: the days before that of `at` are
    /// let go. One call, so that a history kept in a dictionary is looked up once per push.
    public mutating func recordToday(_ flow: FlowContent, held: Set<NodePlace>, at: Date) {
        record(flow, held: held, at: at)
        dropDays(beforeDayOf: at)
    }

    /// Lets go of the pushes before the local day of `instant` but the last of them (what was
    /// shown at its start).
    private mutating func dropDays(beforeDayOf instant: Date) {
        let start = day(of: instant).start
        if let first = extremes.first, first.day < start { extremes.removeAll { $0.day < start } }
        guard let first = pushes.firstIndex(where: { $0.at >= start }) ?? (pushes.isEmpty ? nil : pushes.count), first > 1 else { return }
        pushes.removeFirst(first - 1)
        column = column.flatMap { $0.start >= first - 1 ? ($0.key, $0.start - (first - 1)) : nil }
    }

    /// The local day of `instant`, looked up only when `instant` leaves the one looked up last:
    /// finding a day's bounds asks the zone's rules some 36 times, which at every push cost more
    /// than the rest of it.
    private mutating func day(of instant: Date) -> LocalDay {
        let day = keptDay.flatMap { $0.contains(instant) ? $0 : nil } ?? zone.day(containing: instant)
        keptDay = day
        return day
    }

    /// One chart per local day that holds a push, in order. A day starts with what the widget
    /// showed at its midnight (the last document of the day before) and ends at its midnight, or,
    /// on the last day, at `end` (when the replay stopped: the last document was still shown).
    public func charts(title: String, through end: Date?) -> [DayChart] {
        guard let last = pushes.last else { return [] }
        var charts: [DayChart] = []
        var index = 0
        var carried: Push?
        while index < pushes.count {
            let day = zone.day(containing: pushes[index].at)
            // The day starts with what was shown at its midnight.
            var events: [Push] = []
            if var shown = carried {
                shown.at = day.start
                events.append(shown)
            }
            while index < pushes.count, pushes[index].at < day.end {
                events.append(pushes[index])
                index += 1
            }
            let until = index < pushes.count ? day.end : min(day.end, max(last.at, end ?? last.at))
            charts.append(DayChart(title: title, day: day, history: self, events: events, until: until))
            carried = events.last
        }
        return charts
    }
}

/// The power of every node of a flow widget over one local day: a line per node against the local
/// time of day (00:00 to 24:00, the day's true length on a DST day), a kW scale, the signed nodes
/// (exchange, storage) around a zero line, and a legend with the node names.
public struct DayChart: Sendable {
    public struct Sample: Sendable, Equatable {
        public var at: Date
        /// In the chart's unit (kW for a widget in W).
        public var value: Double

        public init(at: Date, value: Double) {
            self.at = at
            self.value = value
        }
    }

    /// One node's line; a slot that disappears (cleared while its meter was silent) breaks it.
    public struct Series: Sendable {
        public let place: NodePlace
        public var name: String
        public var color: WidgetColor
        public var segments: [[Sample]]

        public var samples: [Sample] { segments.flatMap { $0 } }

        /// The name, and for a signed node what its signs mean.
        public var legend: String {
            switch place {
            case .exchange: "\(name) (+ importing, − exporting)"
            case .storage: "\(name) (+ filling, − draining)"
            case .input, .output: name
            }
        }
    }

    /// The value axis: from `lower` to `upper` in ticks of `step`, 0 always among them.
    public struct Axis: Sendable, Equatable {
        public var lower: Double
        public var upper: Double
        public var step: Double

        /// A round step (1, 2, 2.5 or 5 × 10ⁿ) giving about five ticks over everything drawn, and 0.
        init(covering values: [Double]) {
            let low = min(0, values.min() ?? 0)
            var high = max(0, values.max() ?? 0)
            if high - low < 1e-9 { high = low + 1 }
            let rough = (high - low) / 5
            var magnitude = 1.0
            while magnitude * 10 <= rough { magnitude *= 10 }
            while magnitude > rough { magnitude /= 10 }
            step = [1, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= rough } ?? magnitude * 10
            lower = (low / step).rounded(.down) * step
            upper = (high / step).rounded(.up) * step
        }

        var ticks: [Double] {
            let count = Int(((upper - lower) / step).rounded())
            return (0...count).map { lower + Double($0) * step }
        }

        /// The decimals a tick label needs: 0 for steps of 1 or more, 1 for 0.5, 2 for 0.25.
        var decimals: Int {
            var decimals = 0
            var scaled = step
            while decimals < 3, abs(scaled - scaled.rounded()) > 1e-6 {
                scaled *= 10
                decimals += 1
            }
            return decimals
        }
    }

    public let title: String
    public let day: LocalDay
    public let zone: any LocalTimeZone
    /// What the values are in: `kW` for a widget in W or kW, else the widget's own unit.
    public let unit: String
    public let series: [Series]
    public let axis: Axis

    init(title: String, day: LocalDay, history: PowerHistory, events: [PowerHistory.Push], until: Date) {
        self.title = title
        self.day = day
        zone = history.zone
        let divisor: Double
        switch history.unit {
        case nil, "W": (unit, divisor) = ("kW", 1000)
        case "kW": (unit, divisor) = ("kW", 1)
        case let other?: (unit, divisor) = (other, 1)
        }
        var lines: [NodePlace: Series] = [:]
        var open: Set<NodePlace> = []
        for push in events {
            var present: Set<NodePlace> = []
            for place in NodePlace.all {
                guard let rate = push[place.index] else { continue }
                present.insert(place)
                let value = rate / divisor
                let at = push.at
                var line = lines[place]
                    ?? Series(place: place, name: history.names[place.index] ?? "", color: history.colors[place.index] ?? .slotDefault(place), segments: [])
                if open.contains(place), let previous = line.segments[line.segments.count - 1].last {
                    if at > previous.at { line.segments[line.segments.count - 1].append(Sample(at: at, value: previous.value)) }
                    if value != previous.value { line.segments[line.segments.count - 1].append(Sample(at: at, value: value)) }
                } else {
                    line.segments.append([Sample(at: at, value: value)])
                }
                lines[place] = line
            }
            // A slot that left the document ends its line where it left.
            for place in open.subtracting(present) { lines[place]?.hold(until: push.at) }
            open = present
        }
        for place in open { lines[place]?.hold(until: until) }
        var ordered = lines.values.sorted { $0.place.index < $1.place.index }
        // Each line its own color: a node without one, or sharing one, takes a slot's or a spare.
        var used: [WidgetColor] = []
        var spares = WidgetColor.spare[...]
        for position in ordered.indices {
            var color = ordered[position].color
            if used.contains(color) { color = spares.popFirst() ?? color }
            used.append(color)
            ordered[position].color = color
        }
        series = ordered
        let pushed = history.extremes.first { $0.day == day.start }.map { [$0.rates.lowerBound / divisor, $0.rates.upperBound / divisor] } ?? []
        axis = Axis(covering: ordered.flatMap { $0.samples.map(\.value) } + pushed)
    }

    // MARK: - Drawing

    public static let width = 800.0
    static let plotLeft = 70.0
    static let plotRight = width - 30
    static let plotTop = 92.0
    static let plotBottom = 362.0

    public func svg() -> String {
        let legend = legendPlaces()
        let height = (legend.last?.y ?? Self.plotBottom + 40) + 28
        var card = Card(
            shared: SharedContent(label: "\(title) · \(day.date)", subtitle: "Power in \(unit) by local time (\(zone.identifier))"),
            width: Self.width, height: height,
            fallbackTitle: title)
        let style = card.style
        drawGrid(on: &card)
        for line in series { draw(line, on: &card) }
        for (line, place) in zip(series, legend) {
            card.svg.group([("class", "legend-item")]) { svg in
                svg.element(
                    "line",
                    [("x1", SVGWriter.number(place.x)), ("y1", SVGWriter.number(place.y - 5)), ("x2", SVGWriter.number(place.x + 22)),
                     ("y2", SVGWriter.number(place.y - 5)), ("stroke", line.color.onLight.hex), ("stroke-width", "3.5"),
                     ("stroke-linecap", "round")])
                svg.label(line.legend, x: place.x + 30, y: place.y, size: 13, maxWidth: Self.legendTextWidth, anchor: "start", fill: style.text.hex)
            }
        }
        return card.finish()
    }

    static let legendTextWidth = 300.0

    /// Where each legend entry starts (the baseline of its name), in rows under the time axis.
    func legendPlaces() -> [Point] {
        var places: [Point] = []
        var x = Self.plotLeft
        var y = Self.plotBottom + 56
        for line in series {
            let width = 30 + min(Self.legendTextWidth, SVGWriter.estimatedWidth(line.legend, size: 13, bold: false)) + 26
            if x + width > Self.plotRight, x > Self.plotLeft {
                x = Self.plotLeft
                y += 24
            }
            places.append(Point(x: x, y: y))
            x += width
        }
        return places
    }

    func xPosition(_ at: Date) -> Double { Self.xPosition(at, in: day) }

    static func xPosition(_ at: Date, in day: LocalDay) -> Double {
        let share = at.timeIntervalSince(day.start) / day.end.timeIntervalSince(day.start)
        return plotLeft + (plotRight - plotLeft) * min(1, max(0, share))
    }

    func yPosition(_ value: Double) -> Double {
        Self.plotBottom - (Self.plotBottom - Self.plotTop) * (value - axis.lower) / (axis.upper - axis.lower)
    }

    /// Value lines and labels, the zero line stronger; time ticks every 3 hours, labelled with the
    /// local clock (on a DST day they show the jump).
    private func drawGrid(on card: inout Card) {
        let style = card.style
        let pale = style.paleText.hex
        card.svg.group([("class", "grid")]) { svg in
            for tick in axis.ticks {
                let y = yPosition(tick)
                let isZero = abs(tick) < axis.step / 1000
                svg.element(
                    "line",
                    [("x1", SVGWriter.number(Self.plotLeft)), ("y1", SVGWriter.number(y)), ("x2", SVGWriter.number(Self.plotRight)),
                     ("y2", SVGWriter.number(y)), ("stroke", isZero ? style.text.mixed(with: style.background, amount: 0.35).hex : WidgetColor.hairline.hex),
                     ("stroke-width", isZero ? "1.5" : "1")] + (isZero ? [("class", "zero")] : []))
                svg.label(
                    DisplayNumber.fixed(isZero ? 0 : tick, decimals: axis.decimals), x: Self.plotLeft - 8, y: y + 4, size: 12,
                    anchor: "end", fill: pale)
            }
            svg.label(unit, x: Self.plotLeft - 8, y: Self.plotTop - 12, size: 12, anchor: "end", weight: "600", fill: pale)
            let hours = day.end.timeIntervalSince(day.start) / 3600
            var marks = stride(from: 0.0, to: hours - 0.5, by: 3).map { day.start.addingTimeInterval($0 * 3600) }
            marks.append(day.end)
            for mark in marks {
                let x = xPosition(mark)
                svg.element(
                    "line",
                    [("x1", SVGWriter.number(x)), ("y1", SVGWriter.number(Self.plotTop)), ("x2", SVGWriter.number(x)),
                     ("y2", SVGWriter.number(Self.plotBottom + 5)), ("stroke", WidgetColor.hairline.hex)])
                let hour = mark == day.end ? "24:00" : zone.clockText(at: mark, today: mark)
                svg.label(hour, x: x, y: Self.plotBottom + 22, size: 12, fill: pale, classes: "hour")
            }
        }
    }

    private func draw(_ line: Series, on card: inout Card) {
        let paint = line.color.onLight.hex
        card.svg.group([("class", "series"), ("data-place", line.place.description), ("data-name", line.name)]) { svg in
            for segment in line.segments {
                let points = Self.averaged(segment.map { Point(x: xPosition($0.at), y: yPosition($0.value)) })
                if points.count == 1 {
                    svg.element("circle", [("cx", SVGWriter.number(points[0].x)), ("cy", SVGWriter.number(points[0].y)), ("r", "2.5"), ("fill", paint)])
                } else {
                    svg.element(
                        "polyline",
                        [("points", SVGWriter.points(points)), ("fill", "none"), ("stroke", paint), ("stroke-width", "2"),
                         ("stroke-linejoin", "round")])
                }
            }
        }
    }

    /// The line as drawn: per pixel column (about two minutes of the day), the mean of the power
    /// over the part of the column the line covers, weighted by time. The area under the drawn
    /// line stays the day's energy, a day of pushes every few seconds draws with one point per
    /// column, and a push shown for a few seconds (readings of one moment arriving a second apart)
    /// stays what it was on the phone: a blip, not a wall.
    static func averaged(_ points: [Point]) -> [Point] {
        guard points.count > 1 else { return points }
        var drawn: [Point] = [points[0]]
        var column = Int(points[0].x.rounded(.down))
        var area = 0.0
        var covered: (from: Double, to: Double)?
        func flush() {
            guard let span = covered, span.to > span.from else { return }
            drawn.append(Point(x: (span.from + span.to) / 2, y: area / (span.to - span.from)))
            area = 0
            covered = nil
        }
        for (p, q) in zip(points, points.dropFirst()) where q.x > p.x {
            var from = p.x
            while from < q.x {
                let here = Int(from.rounded(.down))
                if here != column {
                    flush()
                    column = here
                }
                let to = min(q.x, Double(here + 1))
                func y(at x: Double) -> Double { p.y + (q.y - p.y) * (x - p.x) / (q.x - p.x) }
                area += (y(at: from) + y(at: to)) / 2 * (to - from)
                covered = (covered?.from ?? from, to)
                from = to
            }
        }
        flush()
        drawn.append(points[points.count - 1])
        return drawn
    }
}

extension DayChart.Series {
    /// Draws the last value on until `end` and closes the line.
    mutating func hold(until end: Date) {
        guard let last = segments.last?.last, end > last.at else { return }
        segments[segments.count - 1].append(DayChart.Sample(at: end, value: last.value))
    }
}

extension NodePlace {
    /// The six places of a flow in the order of the document and the legend: inputs, the output,
    /// the storage, the exchange.
    static let all: [NodePlace] = [.input(0), .input(1), .input(2), .output, .storage, .exchange]

    var index: Int {
        switch self {
        case .input(let index): min(index, 2)
        case .output: 3
        case .storage: 4
        case .exchange: 5
        }
    }
}

extension FlowContent {
    /// Every node of the document with its place, inputs first.
    public var nodes: [(place: NodePlace, node: FlowNode)] {
        var all: [(place: NodePlace, node: FlowNode)] = []
        forEachNode { all.append(($0, $1)) }
        return all
    }

    /// Calls `body` with every node of the document and its place, inputs first, each read in
    /// place: the chart records every push, and an array of the nodes copied each of their texts.
    public func forEachNode(_ body: (NodePlace, FlowNode) -> Void) {
        if let inputs { for index in inputs.indices { body(.input(index), inputs[index]) } }
        if let output { body(.output, output) }
        if let storage { body(.storage, storage) }
        if let exchange { body(.exchange, exchange) }
    }
}
