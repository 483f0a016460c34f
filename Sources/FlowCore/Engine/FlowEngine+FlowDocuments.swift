import FoundationEssentials

/// From the nodes' values to a flow widget's document (`spec/flow-template.txt`), quantized per its
/// policy, and its offer to the patch policy.
extension FlowEngine {
    /// The widget's content now, quantized per its policy. A node showing a held reading of a
    /// silent meter is gray and marked held, and the subtitle says which meters are silent since
    /// when (unless the widget's `stale_marker` is off); otherwise it shows the figure of the
    /// day's money the config asks for, if any. `held`: the places that show a held reading.
    /// `balanceKnown`: the derived output shows the balance, known now (what `derivesOutput`
    /// asks: the balance is worked out once per offer, here).
    /// The parts are made apart and put together at the end: a document built in place was copied
    /// to be returned.
    mutating func content(
        of position: Int, at now: Date, held: inout Set<NodePlace>, balanceKnown: inout Bool, into out: inout [Output]
    ) -> FlowContent {
        // The widget's parts are read in place: a copy of the whole widget state is made for
        // nothing at every message.
        let policy = board.widgets[position].flow!.config.policy
        let staleMarker = board.widgets[position].flow!.config.staleMarker
        var shared = board.widgets[position].flow!.config.shared
        if let figure = board.widgets[position].flow!.config.subtitleMoney { shared.subtitle = moneySubtitle(figure, ofWidget: position, at: now) }
        var inputs: [FlowNode]?
        var output, storage, exchange: FlowNode?
        // Nodes whose meters are silent while the widget shows their last reading, and since when.
        var silent: [Int: Date] = [:]
        for index in board.widgets[position].flow!.nodes.indices {
            let node = board.widgets[position].flow!.nodes[index]
            guard let value = value(of: node, inWidget: position, at: now) else { continue }
            if let parts = value.parts {
                board.widgets[position].flow!.lastKnownBalance = parts.raw
                balanceKnown = true
            }
            checkSigns(of: node, value: value, at: position, now: now, into: &out)
            let rate = node.setup.rate(value.raw)
            var total: Double?
            if let energy = node.total, energy.isCounting {
                total = PatchPolicy.quantize(energy.energyKWh, step: policy.totalStep)
            }
            var level: Double?
            if let source = node.level, let reading = bank.sources[source].reading {
                level = min(100, max(0, PatchPolicy.quantize(reading.value, step: policy.levelStep)))
            }
            // Its place in the document: an input by its index among the inputs drawn.
            let place = node.place.slot == .inputs ? .input(inputs?.count ?? 0) : node.place
            var color = node.config.color
            if staleMarker, value.isHeld {
                color = Self.staleColor
                held.insert(place)
                noteSilent(index, heldFor: heldSources(of: node, inWidget: position, at: now), inWidget: position, at: now, into: &silent)
            }
            let shown = FlowNode(
                name: node.config.name, rate: PatchPolicy.quantize(rate, step: policy.rateStep), total: total,
                level: level, icon: node.config.icon, color: color)
            switch node.place {
            case .input:
                // Appended in place: `(inputs ?? []) + [shown]` made two arrays per input, per message.
                if inputs == nil { inputs = [shown] } else { inputs!.append(shown) }
            case .output: output = shown
            case .storage: storage = shown
            case .exchange: exchange = shown
            }
        }
        if !silent.isEmpty { shared.subtitle = staleSubtitle(silentNames(silent, inWidget: position), at: now) }
        return FlowContent(shared: shared, unit: board.widgets[position].flow!.config.unit, inputs: inputs, output: output, storage: storage, exchange: exchange)
    }

    /// `Net today €1.18`, `Net this month €31.40` (the month's closed days and today) or `Now
    /// €0.312/kWh, €0.280 from 14:00` (see `DayPricing.priceNowText`), to the cent or the tenth of a cent
    /// the text shows: the widget is pushed when the text changes, not at every message.
    func moneySubtitle(_ figure: MoneyFigure, ofWidget position: Int, at now: Date) -> String? {
        guard let currency = config.tariff?.currency else { return nil }
        switch figure {
        case .netCost:
            return moneyReport(of: position, at: now).map { "Net today \(currency.text($0.netCost))" }
        case .monthNetCost:
            return periodMoney(.month, of: position, at: now).map { "Net this month \(currency.text($0.netCost))" }
        case .priceNow:
            return pricing.priceNowText(at: now, zone: zone, currency: currency)
        }
    }

    /// Whether the output a push shows is the balance of the rates it shows: the output is
    /// derived, the balance is known (`balanceKnown`, from `content`: an unknown one shows the
    /// output's own `when_stale`), and the exchange and storage it needs are drawn. An input not
    /// drawn counts 0, as in the balance.
    func derivesOutput(_ position: Int, _ candidate: FlowContent, balanceKnown: Bool) -> Bool {
        guard balanceKnown, board.widgets[position].flow!.balanceNode != nil, candidate.draws(.output) else { return false }
        return board.widgets[position].flow!.config.has(.storage) == candidate.draws(.storage) && board.widgets[position].flow!.config.has(.exchange) == candidate.draws(.exchange)
    }

    /// Offers flow widget `position` its content (see `offer`).
    mutating func offerFlow(_ position: Int, at now: Date, urgent: Bool, into out: inout [Output]) {
        var held: Set<NodePlace> = []
        var balanceKnown = false
        let candidate = content(of: position, at: now, held: &held, balanceKnown: &balanceKnown, into: &out)
        let name = board.widgets[position].name
        if candidate.inputs == nil, candidate.output == nil, candidate.storage == nil, candidate.exchange == nil {
            // Nothing to show: quiet before the first reading; later (every slot cleared as stale)
            // the widget cannot be sent an empty flow, so it keeps its last document, and the log says so.
            if board.widgets[position].policy.delivered != nil {
                note(.warning, key: "cleared:\(name)", at: now, into: &out) {
                    "widget '\(name)': every slot is stale and cleared; the widget keeps showing its last document"
                }
            }
            return
        }
        var violations: [ContentViolation] = []
        candidate.validate(into: &violations)
        guard isValid(violations, of: name, at: now, into: &out) else { return }
        let derives = derivesOutput(position, candidate, balanceKnown: balanceKnown)
        // The candidate's last use: the policy takes it over.
        if var push = board.widgets[position].policy.offer(flow: candidate, at: now, urgent: urgent, derivesOutput: derives) {
            push.held = HeldMark(nodes: held)
            out.append(.push(widget: name, at: now, push))
            sendAccounts(of: position, at: now, into: &out)
        }
    }
}
