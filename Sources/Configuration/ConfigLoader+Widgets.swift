import FlowCore

extension ConfigLoader {
    /// A widget as read, before the progress widgets' references to flow widgets are checked.
    enum LoadedWidget {
        /// With its `subtitle: {show: …}`, which needs a tariff.
        case flow(FlowWidgetConfig, moneySubtitle: ConfigNode?)
        /// With its `progress:` mapping and its `flow:`, for the problems found once every widget
        /// is read.
        case progress(ProgressWidgetConfig, progress: ConfigNode, flow: ConfigValue<String>?)
    }

    /// What `widgets:` gave: the flow and progress widgets, and each widget's `push:` as written,
    /// which the sinks' loader reads with `output:`.
    struct WidgetsSection {
        var flow: FlowConfig
        var pushes: [(widget: String, push: ConfigNode)] = []
        /// What shows the day's money, and so needs `tariff:` (read after the widgets): each
        /// place, and what it shows in the config's words.
        var showsMoney: [(place: ConfigNode, what: String)] = []
        /// The `progress:` of each bar of `period: billing`, which needs the config's `billing_day:`.
        var billingPeriods: [ConfigNode] = []
    }

    /// The `widgets:` mapping: flow widgets, and progress widgets that read them (in any order).
    func loadWidgets(_ widgetsNode: ConfigNode, sources: [SourceConfig]) -> WidgetsSection {
        var section = WidgetsSection(flow: FlowConfig(sources: sources, widgets: []))
        guard let map = widgetsNode.mapping() else { return section }
        var progress: [(progress: ConfigNode, flow: ConfigValue<String>?)] = []
        for (name, widgetNode) in widgetsNode.entries ?? [] {
            let (widget, push) = loadWidget(name.value, widgetNode, sources: sources)
            if let push { section.pushes.append((name.value, push)) }
            switch widget {
            case .flow(let widget, let subtitle)?:
                section.flow.widgets.append(widget)
                if let subtitle, let figure = widget.subtitleMoney { section.showsMoney.append((subtitle, figure.rawValue)) }
            case .progress(let widget, let node, let flow)?:
                section.flow.progressWidgets.append(widget)
                progress.append((node, flow))
                if case .cost(_, let period) = widget.measure {
                    section.showsMoney.append((node, "of: cost"))
                    if period == .billing { section.billingPeriods.append(node) }
                }
            case nil:
                break
            }
        }
        if map.pairs.isEmpty { widgetsNode.report("needs at least one widget") }
        for (widget, place) in zip(section.flow.progressWidgets, progress) {
            checkReferences(of: widget, in: section.flow, progress: place.progress, flow: place.flow)
        }
        return section
    }

    /// The templates flowbridge feeds.
    enum Template: String, CaseIterable {
        case flow, progress
    }

    /// One widget, and its `push:` (taken whatever the template, for the sinks' loader).
    func loadWidget(_ name: String, _ widgetNode: ConfigNode, sources: [SourceConfig]) -> (LoadedWidget?, push: ConfigNode?) {
        guard var map = widgetNode.mapping() else { return (nil, nil) }
        defer { map.finish() }
        let push = map.field("push")
        let written = map.required("template")?.text()
        guard let template = written.flatMap({ Template(rawValue: $0.value) }) else {
            if let written {
                written.report("'\(written.value)' is not a template flowbridge feeds (\(Template.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            // Without a template its other keys mean nothing: one problem, not one per key.
            map.ignoreRest()
            return (nil, push)
        }
        // What every template shares: the content's own fields, the policy, the stale marker.
        let subtitle = map.field("subtitle").map { loadSubtitle($0, template: template) }
        let shared = SharedContent(
            label: map.text("label")?.value, subtitle: subtitle?.text, icon: map.text("icon", limit: 128)?.value,
            accentColor: map.color("accent_color")?.value, backgroundColor: map.color("background_color")?.value,
            textColor: map.color("text_color")?.value)
        let policy = map.field("policy").map(loadPolicy) ?? PatchPolicyConfig()
        let staleMarker = map.flag("stale_marker")?.value ?? true
        let known = Dictionary(sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        switch template {
        case .progress:
            guard let progress = loadProgress(&map, sources: known) else { return (nil, push) }
            let widget = ProgressWidgetConfig(
                name: name, shared: shared, measure: progress.measure, flow: progress.flow?.value, policy: policy, staleMarker: staleMarker)
            return (.progress(widget, progress: progress.node, flow: progress.flow), push)
        case .flow:
            let money = subtitle?.money
            let widget = FlowWidgetConfig(name: name, shared: shared, policy: policy, staleMarker: staleMarker, subtitleMoney: money?.value)
            guard let loaded = loadFlow(widget, &map, sources: known) else { return (nil, push) }
            if let money, money.value == .netCost || money.value == .monthNetCost, loaded.exchange == nil {
                money.report("\(money.value.rawValue) is the money of this widget's exchange, and it has none (the grid's import and export are what a tariff prices)")
            }
            return (.flow(loaded, moneySubtitle: money.map { $0.holding($0.node) }), push)
        }
    }

    /// `subtitle:`: a text, or on a flow widget `{show: net_cost | net_cost_month | price_now}`, a
    /// figure of the money that the engine writes, a short text (`Net today €1.18`).
    func loadSubtitle(_ node: ConfigNode, template: Template) -> (text: String?, money: ConfigValue<MoneyFigure>?) {
        guard node.node.pairs != nil else { return (node.text()?.value, nil) }
        guard template == .flow else {
            node.report("a bar's subtitle is a text; {show: …}, a figure of the day's money, is a flow widget's")
            return (nil, nil)
        }
        guard var map = node.mapping() else { return (nil, nil) }
        defer { map.finish() }
        return (nil, map.required("show")?.choice(MoneyFigure.self))
    }

    /// Everything that shows the day's money needs the prices it is counted at: without
    /// `tariff:` (`written` false) each says so at its own key. A `tariff:` written with problems
    /// has them said at its keys, once.
    func checkTariff(for section: WidgetsSection, written: Bool) {
        guard !written else { return }
        for (place, what) in section.showsMoney {
            place.report("\(what) shows the day's money, counted at the tariff's prices, and the config has no tariff:")
        }
    }

    /// `progress:` of a progress widget: what its bar measures, and the flow widget it reads.
    func loadProgress(_ map: inout MappingReader, sources: [String: SourceConfig]) -> (measure: ProgressMeasure, node: ConfigNode, flow: ConfigValue<String>?)? {
        guard let progressNode = map.required("progress"), var progress = progressNode.mapping() else { return nil }
        defer { progress.finish() }
        let flow = progress.text("flow")
        return loadMeasure(&progress, sources: sources).map { ($0, progressNode, flow) }
    }

    /// A flow widget's `unit:` and `flow:`: its nodes in their slots.
    func loadFlow(_ widget: FlowWidgetConfig, _ map: inout MappingReader, sources: [String: SourceConfig]) -> FlowWidgetConfig? {
        var widget = widget
        if let unit = map.text("unit", limit: 32) { widget.unit = unit.value }
        guard let flowNode = map.required("flow"), var flow = flowNode.mapping() else { return nil }
        defer { flow.finish() }
        if let inputs = flow.field("inputs") {
            if let items = inputs.items {
                if items.count > 3 { inputs.report("the widget draws at most 3 inputs, found \(items.count)") }
                widget.inputs = items.compactMap { loadNode($0, slot: .inputs, sources: sources) }
            } else if inputs.node.pairs != nil {
                // One input written as a mapping: accept it as a list of one.
                widget.inputs = [loadNode(inputs.asItem(0), slot: .inputs, sources: sources)].compactMap { $0 }
            } else {
                inputs.report("expected a list of nodes, found \(inputs.node.describedKind)")
            }
        }
        widget.output = flow.field("output").flatMap { loadNode($0, slot: .output, sources: sources) }
        widget.storage = flow.field("storage").flatMap { loadNode($0, slot: .storage, sources: sources) }
        widget.exchange = flow.field("exchange").flatMap { loadNode($0, slot: .exchange, sources: sources) }
        if widget.inputs.isEmpty, widget.output == nil, widget.storage == nil, widget.exchange == nil {
            flowNode.report("needs at least one of inputs, output, storage, exchange")
        }
        if widget.output?.rate == .balance, widget.inputs.isEmpty, widget.storage == nil, widget.exchange == nil {
            flowNode.report(at: "output.rate", "balance needs inputs, storage or exchange to derive the output from")
        }
        return widget
    }

    /// The words of `progress: {of: …}`.
    enum MeasureWord: String, CaseIterable {
        case battery, selfSufficiency = "self_sufficiency", productionGoal = "production_goal", cost
    }

    /// A budget beyond this is a typo (or a wrong unit), in any currency: no home's month
    /// costs a million.
    static let largestBudget = 1_000_000.0

    /// `of:` and what it takes: `rate:`, `level:` and `capacity_kwh:` for a battery, `goal_kwh:`
    /// for a production goal, `budget:` for the cost. A key another measure takes is reported as
    /// unknown here.
    func loadMeasure(_ map: inout MappingReader, sources: [String: SourceConfig]) -> ProgressMeasure? {
        guard let word = map.required("of")?.choice(MeasureWord.self) else {
            map.ignoreRest()
            return nil
        }
        func positive(_ kWh: ConfigValue<Double>) -> Double? {
            if kWh.value <= 0 { kWh.report("must be more than 0 kWh") }
            return kWh.value > 0 ? kWh.value : nil
        }
        switch word.value {
        case .battery:
            var gauge = BatteryGauge()
            gauge.rate = map.field("rate").flatMap { loadRate($0, slot: .storage, sources: sources) }
            if let level = map.text("level") {
                checkSource(level.value, at: level, quantity: .level, sources: sources)
                gauge.level = level.value
            }
            gauge.capacityKWh = map.number("capacity_kwh").flatMap(positive)
            return .battery(gauge)
        case .selfSufficiency:
            return .selfSufficiency
        case .productionGoal:
            guard let goal = map.required("goal_kwh")?.number().flatMap(positive) else { return nil }
            return .productionGoal(goalKWh: goal)
        case .cost:
            let period = map.choice("period", as: MoneyPeriod.self)?.value ?? .day
            guard let budget = map.required("budget")?.number() else { return nil }
            guard budget.value > 0, budget.value <= Self.largestBudget else {
                let whose = switch period {
                case .day: "day's"
                case .month: "month's"
                case .billing: "billing month's"
                }
                budget.report(budget.value > 0
                    ? "\(JSONValue.format(budget.value)) is beyond \(JSONValue.format(Self.largestBudget)): a \(whose) budget in the tariff's currency (a wrong unit?)"
                    : "must be more than 0: the \(whose) net cost, in the tariff's currency, that fills the bar")
                return nil
            }
            return .cost(budget: budget.value, period: period)
        }
    }

    /// What a progress widget reads from a flow widget must be there: the flow widget its `flow:`
    /// names (or the only one), and in it the storage's rate and level, the import and output
    /// totals, the inputs' totals, or the exchange the money is counted on.
    func checkReferences(of widget: ProgressWidgetConfig, in config: FlowConfig, progress: ConfigNode, flow flowName: ConfigValue<String>?) {
        let flowNames = config.widgets.map(\.name)
        let listed = flowNames.isEmpty ? "there is none" : "flow widgets: \(flowNames.joined(separator: ", "))"
        let flow = config.flowWidget(for: widget)
        if let flowName, flow == nil {
            flowName.report("'\(flowName.value)' is not a flow widget (\(listed))")
            return
        }
        let what = "of: \(widget.measure.word)"
        if case .battery(let gauge) = widget.measure {
            guard gauge.node(besides: flow) == nil else { return }
            if flow == nil, flowNames.count > 1 {
                progress.report("\(what) reads the storage of a flow widget unless it has a rate and a level of its own; \(listed): say which with flow:")
                return
            }
            let missing = [("rate", "a power source (+ filling)", (gauge.rate ?? flow?.storage?.rate) == nil), ("level", "a % source", (gauge.level ?? flow?.storage?.level) == nil)]
            for (key, wanted, isMissing) in missing where isMissing {
                let elsewhere = flow.map { "flow widget '\($0.name)' has no storage \(key)" } ?? "the config has no flow widget"
                progress.report(at: key, "\(what) needs a \(key): \(wanted) here, or the storage \(key) of a flow widget; \(elsewhere)")
            }
            return
        }
        guard let flow else {
            let fix = flowNames.isEmpty ? "add one" : "say which with flow:"
            progress.report("\(what) reads the day's totals of a flow widget (\(listed)): \(fix)")
            return
        }
        switch widget.measure {
        case .selfSufficiency:
            if flow.output?.total == nil {
                progress.report("\(what) reads today's output total of flow widget '\(flow.name)', and its output has none (total: integrate or a counter)")
            }
            switch flow.exchange?.total {
            case .imported?, .counter?, .daily?:
                break
            default:
                progress.report("\(what) reads today's import of flow widget '\(flow.name)': its exchange needs total: import (or a counter of imported energy)")
            }
        case .productionGoal:
            if !flow.inputs.contains(where: { $0.total != nil }) {
                progress.report("\(what) reads the inputs' totals of flow widget '\(flow.name)', and none of its inputs has a total (total: integrate or a counter)")
            }
        case .cost:
            if flow.exchange == nil {
                progress.report("\(what) reads the day's money of flow widget '\(flow.name)', and it has no exchange node (the grid's import and export are what a tariff prices)")
            }
        case .battery:
            break
        }
    }

    /// `policy:`: when and what is pushed.
    func loadPolicy(_ policyNode: ConfigNode) -> PatchPolicyConfig {
        var policy = PatchPolicyConfig()
        guard var map = policyNode.mapping() else { return policy }
        defer { map.finish() }
        if let interval = map.duration("min_interval") { policy.minIntervalSeconds = interval.value }
        if let settle = map.duration("settle") {
            // A moment's readings, not a minute's: longer would only make every push late.
            if settle.value > 60 { settle.report("must be at most 60s") }
            policy.settleSeconds = min(settle.value, 60)
        }
        func nonNegative(_ step: ConfigValue<Double>) -> Double {
            if step.value < 0 { step.report("must not be negative") }
            return max(0, step.value)
        }
        if let value = map.number("rate_step").map(nonNegative) { policy.rateStep = value }
        if let value = map.number("rate_deadband").map(nonNegative) { policy.rateDeadband = value }
        if let value = map.number("total_step").map(nonNegative) { policy.totalStep = value }
        if let value = map.number("level_step").map(nonNegative) { policy.levelStep = value }
        return policy
    }

    /// A source a node or a bar refers to at `place` must exist and read the right quantity.
    func checkSource<Value>(_ name: String, at place: ConfigValue<Value>, quantity: SourceUnit.Quantity, sources: [String: SourceConfig]) {
        guard let source = sources[name] else {
            let names = sources.keys.sorted().joined(separator: ", ")
            place.report("unknown source '\(name)' (sources: \(names))")
            return
        }
        if source.unit.quantity != quantity {
            let key = place.path.split(separator: ".").last.map(String.init) ?? place.path
            place.report("source '\(name)' is \(source.unit.quantity.rawValue) (\(source.unit.rawValue)); \(key) needs \(quantity.rawValue)")
        }
    }

    /// A node of a flow widget's slot: its rate, total, level (storage only) and how it is shown.
    func loadNode(_ nodeField: ConfigNode, slot: FlowSlot, sources: [String: SourceConfig]) -> NodeConfig? {
        guard var map = nodeField.mapping() else { return nil }
        defer { map.finish() }
        let name = map.text("name", limit: 32)?.value
        let icon = map.text("icon", limit: 128)?.value
        let color = map.color("color")
        let whenStale = map.choice("when_stale", as: StaleBehavior.self)?.value
        let rate = map.required("rate").flatMap { loadRate($0, slot: slot, sources: sources) }
        var level: String?
        if let levelNode = map.field("level") {
            if slot != .storage {
                levelNode.report("only the storage slot has a level")
            } else if let name = levelNode.text() {
                checkSource(name.value, at: name, quantity: .level, sources: sources)
                level = name.value
            }
        }
        var total: TotalSpec?
        if let totalNode = map.field("total") {
            total = loadTotal(totalNode, slot: slot)
            if let counter = total?.counterSource { checkSource(counter, at: totalNode, quantity: .energy, sources: sources) }
        }
        let accounts = map.field("accounts").map { loadAccounts($0, slot: slot, total: total, sources: sources) } ?? [:]
        guard let rate else { return nil }
        return NodeConfig(
            name: name, rate: rate, total: total, accounts: accounts, level: level, icon: icon, color: color?.value,
            whenStale: whenStale ?? (slot == .inputs ? .zero : .hold))
    }

    /// `solar`, `[east, west]`, `[pconsume, -psupply]`, or `balance` on the output; each source
    /// named must be a power source.
    func loadRate(_ rate: ConfigNode, slot: FlowSlot, sources: [String: SourceConfig]) -> RateSpec? {
        if rate.node.scalarValue == "balance" {
            guard slot == .output else {
                rate.report("balance derives the output; \(slot.rawValue) needs a source")
                return nil
            }
            return .balance
        }
        let texts: [String]
        if let items = rate.items {
            texts = items.compactMap { $0.text()?.value }
            if items.isEmpty { rate.report("an empty list adds up to nothing") }
        } else if let text = rate.text() {
            texts = [text.value]
        } else {
            return nil
        }
        let terms = texts.map { text in
            text.hasPrefix("-") ? RateTerm(source: String(text.dropFirst()).trimmed, negated: true) : RateTerm(source: text.trimmed)
        }
        for term in terms { checkSource(term.source, at: rate, quantity: .power, sources: sources) }
        return .sum(terms)
    }

    /// `accounts: {import: {counter: grid_in}, export: integrate}`: the evidence for each direction
    /// the node counts besides what `total:` says. A direction the slot does not have, a counter
    /// that is no energy source, or an entry that contradicts `total:` (which already says how the
    /// direction it shows is counted) is a problem at its key.
    func loadAccounts(
        _ field: ConfigNode, slot: FlowSlot, total: TotalSpec?, sources: [String: SourceConfig]
    ) -> [EnergyAccount: TotalSpec] {
        guard let entries = field.entries else {
            field.report("expected a mapping of directions (\(EnergyAccount.accounts(of: slot).map(\.rawValue).joined(separator: ", "))) to integrate, {counter: SOURCE} or {daily: SOURCE}, found \(field.node.describedKind)")
            return [:]
        }
        let shown = total.map { EnergyAccount.counted(by: $0, in: slot) }
        var accounts: [EnergyAccount: TotalSpec] = [:]
        for (key, value) in entries {
            guard let account = EnergyAccount(rawValue: key.value), EnergyAccount.accounts(of: slot).contains(account) else {
                key.report("'\(key.value)' is no direction of the \(slot.rawValue) slot (it counts \(EnergyAccount.accounts(of: slot).map(\.rawValue).joined(separator: ", ")))")
                continue
            }
            let evidence: TotalSpec?
            if value.node.scalarValue == "integrate" {
                evidence = account.integrated
            } else if value.node.pairs != nil {
                evidence = loadTotal(value, slot: slot)
            } else {
                value.report("write integrate, {counter: SOURCE} or {daily: SOURCE}")
                evidence = nil
            }
            guard let evidence else { continue }
            if let counter = evidence.counterSource { checkSource(counter, at: value, quantity: .energy, sources: sources) }
            if account == shown, let total, total.counterSource != nil, total != evidence {
                value.report("total: \(total) already says how \(account) is counted; \(evidence == account.integrated ? "integrate" : evidence.description) contradicts it (drop one)")
                continue
            }
            accounts[account] = evidence
        }
        return accounts
    }

    /// `integrate`, `import`, `export`, `charge`, `discharge`, `{counter: SOURCE}`, `{daily: SOURCE}`.
    func loadTotal(_ total: ConfigNode, slot: FlowSlot) -> TotalSpec? {
        if total.node.pairs != nil, var map = total.mapping() {
            defer { map.finish() }
            switch (map.text("counter")?.value, map.text("daily")?.value) {
            case (let source?, nil): return .counter(source: source)
            case (nil, let source?): return .daily(source: source)
            default:
                total.report("write {counter: SOURCE} or {daily: SOURCE}")
                return nil
            }
        }
        guard let word = total.text()?.value else { return nil }
        let allowed: [FlowSlot: [String: TotalSpec]] = [
            .inputs: ["integrate": .integrate], .output: ["integrate": .integrate],
            .exchange: ["import": .imported, "export": .exported],
            .storage: ["charge": .charged, "discharge": .discharged],
        ]
        if let spec = allowed[slot]?[word] { return spec }
        let words = (allowed[slot]?.keys.sorted() ?? []) + ["{counter: SOURCE}", "{daily: SOURCE}"]
        total.report("'\(word)' is not a total of the \(slot.rawValue) slot (use \(words.joined(separator: ", ")))")
        return nil
    }
}
