import FoundationEssentials

/// From the engine's state to a progress widget's document (`spec/progress-template.txt`): a
/// battery's level with its trend, rows and self-advancing window; the day's self-sufficiency;
/// the day's production against a goal; the day's net cost against a budget. Totals and money
/// are the flow widget's own: one energy day.
extension FlowEngine {
    /// A progress widget's document, and the rate its texts show.
    struct GaugeDocument {
        var content: ProgressContent
        /// Held within the deadband of the last push's (`ProgressWidget.shownRateW`).
        var rateW: Double?
        /// When the level it shows was read (`ProgressWidget.shownLevelAt`).
        var levelAt: Date?
        /// The bar shows a held reading of a silent meter (and is gray for it).
        var isHeld = false
    }

    /// The document of progress widget `position` at `now`, quantized per its policy; nil while it
    /// has nothing to show (no level yet, no reading at all).
    func gaugeDocument(of position: Int, at now: Date) -> GaugeDocument? {
        // The bar's machine, copied: its parts are read several times, and nothing is changed.
        let widget = board.widgets[position]
        let gauge = widget.progress!
        var silent: [(name: String, since: Date)] = []
        var document: GaugeDocument
        switch gauge.config.measure {
        case .battery(let battery):
            guard let made = batteryDocument(widget, capacityKWh: battery.capacityKWh, at: now, silent: &silent) else { return nil }
            document = made
        case .selfSufficiency:
            guard let made = selfSufficiencyDocument(widget, at: now, silent: &silent) else { return nil }
            document = made
        case .productionGoal(let goalKWh):
            guard let made = productionDocument(widget, goalKWh: goalKWh, at: now, silent: &silent) else { return nil }
            document = made
        case .cost(let budget, let period):
            guard let made = costDocument(widget, budget: budget, period: period, at: now, silent: &silent) else { return nil }
            document = made
        }
        if gauge.config.staleMarker, !silent.isEmpty {
            document.content.shared.subtitle = staleSubtitle(silent, at: now)
            document.content.shared.accentColor = Self.staleColor
            document.isHeld = true
        }
        return document
    }

    // MARK: - Battery

    /// `value` = level / 100; `trend` from the rate; rows: Charging 800 W, Charged today 3.2 kWh,
    /// Full in 1 h 20 min (or Draining, Empty in); with a capacity and the battery charging, the
    /// window that makes the bar advance on the phone by itself.
    func batteryDocument(
        _ widget: WidgetMachine, capacityKWh: Double?, at now: Date, silent: inout [(name: String, since: Date)]
    ) -> GaugeDocument? {
        let gauge = widget.progress!
        guard let node = gauge.battery, let level = node.level, let reading = bank.sources[level].reading else { return nil }
        let policy = gauge.config.policy
        let value = policy.fraction(reading.value / 100)
        var content = ProgressContent(shared: gauge.config.shared, value: value)
        var rows: [StatRow] = []
        var rate: Double?
        if let measured = measured(node, at: now) {
            let shown = policy.holding(PatchPolicy.quantize(measured.raw, step: policy.rateStep), shown: gauge.shownRateW)
            rate = shown
            let direction = policy.direction(ofRate: shown)
            content.trend = direction > 0 ? .up : direction < 0 ? .down : .flat
            rows.append(StatRow(label: direction > 0 ? "Charging" : direction < 0 ? "Draining" : "Idle", value: JSONValue.format(abs(shown)), unit: "W"))
            if measured.isHeld { silent.append((nodeName(node), heldSince(silentStale(node.terms, at: now), at: now))) }
        }
        if let flow = gauge.flow, let storage = gauge.storage, let total = board.widgets[flow].flow!.nodes[storage].total, total.isCounting {
            // By what `total:` says, not by the evidence `accounts:` may give the account it shows.
            let label = switch board.widgets[flow].flow!.nodes[storage].config.total {
            case .charged: "Charged today"
            case .discharged: "Discharged today"
            default: "Energy today"
            }
            rows.append(StatRow(label: label, value: JSONValue.format(PatchPolicy.quantize(total.energyKWh, step: policy.totalStep)), unit: "kWh"))
        }
        if let capacityKWh, let rate, case let direction = policy.direction(ofRate: rate), direction != 0 {
            // How long the whole capacity takes at this rate: the length of the window.
            let lengthSeconds = capacityKWh * 3_600_000 / abs(rate)
            let remaining = (direction > 0 ? 1 - value : value) * lengthSeconds
            if remaining > 0 {
                rows.append(StatRow(label: direction > 0 ? "Full in" : "Empty in", value: Self.remainingText(seconds: remaining)))
            }
            if direction > 0, value < 1,
                let window = window(of: widget, value: value, levelAt: reading.at, lengthSeconds: lengthSeconds, at: now)
            {
                (content.startDate, content.endDate) = window
            }
        }
        content.statRows = rows.isEmpty ? nil : rows
        return GaugeDocument(content: content, rateW: rate, levelAt: reading.at)
    }

    /// The window (`start_date`, `end_date`) over which the phone advances a charging battery's bar:
    /// its fraction is `value` now and 1 when the battery would be full at the rate, so it spans
    /// `lengthSeconds` (the whole capacity at that rate) and starts `value` of it before now.
    ///
    /// The window last sent stays while it still tells the truth: as long (the same rate, within
    /// its deadband, and capacity), and no level read since (`levelAt`) a step away from where
    /// the window had the bar at that time. Between two readings of the level the window is the
    /// better guess (advancing is what it is for). So a new window goes out when the rate moves
    /// past its deadband or the battery strays a step from the clock's bar; never because the
    /// clock moved, nor with a push for the rows. Nil when a date would break the spec's bounds:
    /// the window is then not sent (`value` alone still shows the level).
    func window(of widget: WidgetMachine, value: Double, levelAt: Date, lengthSeconds: Double, at now: Date) -> (String, String)? {
        let gauge = widget.progress!
        let step = (gauge.config.policy.levelStep > 0 ? gauge.config.policy.levelStep : 1) / 100
        if case .progress(let shown)? = widget.policy.delivered, let startText = shown.startDate, let endText = shown.endDate,
            let start = RFC3339.parse(startText), let end = RFC3339.parse(endText),
            abs(end.timeIntervalSince(start) - lengthSeconds) <= 1, end.timeIntervalSince(now) <= ProgressContent.latestDateSeconds
        {
            if let shownAt = gauge.shownLevelAt, levelAt <= shownAt { return (startText, endText) }
            let fraction = min(1, max(0, levelAt.timeIntervalSince(start) / end.timeIntervalSince(start)))
            if abs(fraction - value) < step { return (startText, endText) }
        }
        // Whole seconds: the phone needs no milliseconds, and a window that moved by one is no news.
        let startSeconds = (now.timeIntervalSince1970 - value * lengthSeconds).rounded()
        // An endless time to full (a rate a hair above 0 W, an absurd capacity) reaches dates that
        // cannot even be written: such a window breaks the spec's bounds anyway.
        guard Self.plausibleSeconds.contains(startSeconds), Self.plausibleSeconds.contains(startSeconds + lengthSeconds.rounded()) else {
            return nil
        }
        let start = Date(timeIntervalSince1970: startSeconds)
        let end = start.addingTimeInterval(lengthSeconds.rounded())
        let window = (RFC3339.format(start), RFC3339.format(end))
        var broken: [ContentViolation] = []
        _ = ProgressContent.checkDate(window.0, "start_date", now: now, into: &broken)
        _ = ProgressContent.checkDate(window.1, "end_date", now: now, into: &broken)
        return broken.isEmpty && start < end ? window : nil
    }

    /// `45 min`, `1 h 20 min`, `3 days 4 h`: how long until full or empty, to the minute.
    static func remainingText(seconds: Double) -> String {
        // A hundred years stand for longer ones: an endless time (a rate a hair above 0 W) is no Int.
        let minutes = max(1, Int((min(seconds, 100 * 365 * 86_400) / 60).rounded()))
        if minutes < 60 { return "\(minutes) min" }
        if minutes < 48 * 60 { return minutes % 60 == 0 ? "\(minutes / 60) h" : "\(minutes / 60) h \(minutes % 60) min" }
        let hours = minutes / 60 % 24
        return hours == 0 ? "\(minutes / 1440) days" : "\(minutes / 1440) days \(hours) h"
    }

    // MARK: - The day's totals

    /// 1 − import today / output today, within 0…1 (no consumption yet: 1); rows: Home, From
    /// grid, with a tariff Saved (third, among the rows the widget draws), Solar today. The totals
    /// are the flow widget's exchange (import) and output totals.
    func selfSufficiencyDocument(_ widget: WidgetMachine, at now: Date, silent: inout [(name: String, since: Date)]) -> GaugeDocument? {
        let gauge = widget.progress!
        guard let flow = gauge.flow, hasRead(widget) else { return nil }
        let policy = gauge.config.policy
        let nodes = board.widgets[flow].flow!.nodes
        let outputKWh = nodes.first { $0.place == .output }?.total?.energyKWh ?? 0
        let importKWh = nodes.first { $0.place == .exchange }?.total?.energyKWh ?? 0
        let value = policy.fraction(outputKWh > 0 ? 1 - importKWh / outputKWh : 1)
        var rows = [energyRow("Home", outputKWh, policy), energyRow("From grid", importKWh, policy)]
        if let saved = moneyReport(of: flow, at: now).flatMap(savedRow) { rows.append(saved) }
        if let solarKWh = inputsKWh(nodes) { rows.append(energyRow("Solar today", solarKWh, policy)) }
        // The grid's or the home's meter silent: their totals stand still while the bar shows them.
        silent = silentNodes(of: flow, where: { $0.place == .exchange || $0.place == .output }, at: now)
        return GaugeDocument(content: ProgressContent(shared: gauge.config.shared, value: value, statRows: rows), rateW: nil)
    }

    /// Today's production (the inputs' totals) / goal, at most 1; rows: Today, Goal, Now (W).
    func productionDocument(
        _ widget: WidgetMachine, goalKWh: Double, at now: Date, silent: inout [(name: String, since: Date)]
    ) -> GaugeDocument? {
        let gauge = widget.progress!
        guard let flow = gauge.flow, hasRead(widget) else { return nil }
        let policy = gauge.config.policy
        let producedKWh = inputsKWh(board.widgets[flow].flow!.nodes) ?? 0
        var rateW = 0.0
        for node in board.widgets[flow].flow!.nodes where node.place.slot == .inputs {
            if let rate = rate(of: node, inWidget: flow, at: now) { rateW += PatchPolicy.quantize(rate, step: policy.rateStep) }
        }
        let shown = policy.holding(rateW, shown: gauge.shownRateW)
        let rows = [
            energyRow("Today", producedKWh, policy), energyRow("Goal", goalKWh, policy),
            StatRow(label: "Now", value: JSONValue.format(shown), unit: "W"),
        ]
        silent = silentNodes(of: flow, where: { $0.place.slot == .inputs }, at: now)
        return GaugeDocument(
            content: ProgressContent(shared: gauge.config.shared, value: policy.fraction(producedKWh / goalKWh), statRows: rows),
            rateW: shown)
    }

    // MARK: - The day's money

    /// Net cost / budget within 0…1 (a period that earned more than it cost shows 0); rows: Net
    /// first, the figure people want and one of the three the large card draws (`€1.18 of €5.00`,
    /// or `earned €0.08; budget €5.00` on a day whose bar stands at 0 because it earned; `€62.00
    /// of €90.00` with the unit `this month` or `this bill` for a month), Import, Export (with an export price; earnings shown as
    /// money off the bill, `−€0.45`), and for the day Saved (with an output) and Unpriced kWh once
    /// a Wh flowed without a price, to the Wh. A month's or a billing month's figures are its
    /// closed days' (`periods`) and today's.
    ///
    /// Every figure is the currency's smallest unit (a cent), and so is the net cost the bar is
    /// made of: the document changes, and the policy pushes it, when a figure it shows moves,
    /// never for a fraction of a cent at each message.
    func costDocument(
        _ widget: WidgetMachine, budget: Double, period: MoneyPeriod, at now: Date, silent: inout [(name: String, since: Date)]
    ) -> GaugeDocument? {
        let gauge = widget.progress!
        guard let flow = gauge.flow, hasRead(widget), let money = periodMoney(period, of: flow, at: now) else { return nil }
        let policy = gauge.config.policy
        let currency = money.currency
        let earned = currency.rounded(money.netCost) < 0
        let net = earned ? "earned \(currency.text(-money.netCost)); budget \(currency.text(budget))" : "\(currency.text(money.netCost)) of \(currency.text(budget))"
        // The period in the row's unit (16 characters): its value keeps the 32 a budget's text needs.
        let span: String? = switch period {
        case .day: nil
        case .month: "this month"
        case .billing: "this bill"
        }
        var rows = [StatRow(label: "Net", value: net, unit: span), StatRow(label: "Import", value: currency.text(money.importCost))]
        if pricing.exportPrices != nil { rows.append(StatRow(label: "Export", value: currency.text(-money.exportEarnings))) }
        if let saved = savedRow(money) { rows.append(saved) }
        if money.unpricedTotalKWh >= MoneyReport.unpricedShownKWh {
            // To the Wh whatever the widget's total_step: 3 Wh unpriced is never "0 kWh".
            rows.append(StatRow(label: "Unpriced", value: JSONValue.format(PatchPolicy.quantize(money.unpricedTotalKWh, step: MoneyReport.unpricedShownKWh)), unit: "kWh"))
        }
        // The grid's meter (import, export) or the home's (what the grid alone would have cost).
        silent = silentNodes(of: flow, where: { $0.place == .exchange || $0.place == .output }, at: now)
        let value = policy.fraction(currency.rounded(money.netCost) / budget)
        return GaugeDocument(content: ProgressContent(shared: gauge.config.shared, value: value, statRows: rows), rateW: nil)
    }

    /// Flow widget `position`'s money of `period` through now: today's, with the closed days of
    /// the month or billing month before it; nil without a tariff or a day.
    func periodMoney(_ period: MoneyPeriod, of position: Int, at now: Date) -> MoneyReport? {
        guard let date = day?.date else { return nil }
        return periods.money(period, of: board.widgets[position].name, today: moneyReport(of: position, at: now), on: date, zone: zone)
    }

    /// `Saved €2.80`: what the panels and the battery saved today; nil without an output.
    func savedRow(_ money: MoneyReport) -> StatRow? {
        money.saved.map { StatRow(label: "Saved", value: money.currency.text($0)) }
    }

    /// A row of energy in kWh, to the widget's `total_step`.
    func energyRow(_ label: String, _ energyKWh: Double, _ policy: PatchPolicyConfig) -> StatRow {
        StatRow(label: label, value: JSONValue.format(PatchPolicy.quantize(energyKWh, step: policy.totalStep)), unit: "kWh")
    }

    /// The sum of the inputs' totals, or nil when none of them counts.
    func inputsKWh(_ nodes: [NodeState]) -> Double? {
        let totals = nodes.filter { $0.place.slot == .inputs }.compactMap(\.total)
        return totals.isEmpty ? nil : totals.map(\.energyKWh).reduce(0, +)
    }

    /// Whether any source the bar reads has read: before that, a day's 0 kWh is no news.
    func hasRead(_ widget: WidgetMachine) -> Bool {
        widget.reads.contains { bank.sources[$0].reading != nil }
    }

    /// When the earliest of these silent sources last sent a value.
    func heldSince(_ silentSources: [Int], at now: Date) -> Date {
        silentSources.compactMap { bank.sources[$0].lastValueAt }.min() ?? now
    }

    /// The nodes of flow widget `position` that `include` picks and that show held readings of
    /// silent meters, by name, as the flow widget's own stale marker names them.
    func silentNodes(of position: Int, where include: (NodeState) -> Bool, at now: Date) -> [(name: String, since: Date)] {
        var silent: [Int: Date] = [:]
        for (index, node) in board.widgets[position].flow!.nodes.enumerated() where include(node) {
            guard let value = value(of: node, inWidget: position, at: now), value.isHeld else { continue }
            noteSilent(index, heldFor: heldSources(of: node, inWidget: position, at: now), inWidget: position, at: now, into: &silent)
        }
        return silentNames(silent, inWidget: position)
    }

    // MARK: - Offers

    /// Offers progress widget `position` its document (see `offer`).
    mutating func offerProgress(_ position: Int, at now: Date, urgent: Bool, into out: inout [Output]) {
        guard let document = gaugeDocument(of: position, at: now) else { return }
        let name = board.widgets[position].name
        let content = WidgetContent.progress(document.content)
        guard isValid(content.validate(now: now), of: name, at: now, into: &out) else { return }
        if var push = board.widgets[position].policy.offer(content, at: now, urgent: urgent) {
            push.held = HeldMark(bar: document.isHeld)
            board.widgets[position].progress!.shownRateW = document.rateW
            board.widgets[position].progress!.shownLevelAt = document.levelAt
            out.append(.push(widget: name, at: now, push))
        }
    }
}
