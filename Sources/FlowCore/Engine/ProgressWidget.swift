import FoundationEssentials

extension FlowEngine {
    /// A progress widget's own state (`spec/progress-template.txt`): what it reads, and the rate
    /// behind its last push. What it shares with a flow widget (its policy, the sources it reads)
    /// is its `WidgetMachine`'s.
    struct ProgressWidget: Sendable {
        /// What a bar is, fixed once the engine is built: behind one reference, so that every
        /// widget's machine stays small (see `FlowWidget.Setup`).
        final class Setup: Sendable {
            let config: ProgressWidgetConfig
            /// The flow widget whose nodes and totals it reads, by position.
            let flow: Int?
            /// `of: battery`: the battery's rate and level as a storage node of the bar's own,
            /// without a total: the day's energy is the flow widget's.
            let battery: NodeState?
            /// `of: battery`: the flow widget's storage node, when the bar reads the same rate: its
            /// total is the day's charge (or discharge) the rows show.
            let storage: Int?

            init(config: ProgressWidgetConfig, flow: Int?, battery: NodeState?, storage: Int?) {
                self.config = config
                self.flow = flow
                self.battery = battery
                self.storage = storage
            }
        }

        let setup: Setup
        /// The rate (W) the texts of the last push show: held within the deadband like a flow's
        /// rates (and so is the window made for it).
        var shownRateW: Double?
        /// When the level the last push shows was read: a window stays until a later reading
        /// disagrees with it.
        var shownLevelAt: Date?

        // Lent, not returned: a field read through a getter copied the whole config first.
        var config: ProgressWidgetConfig { _read { yield setup.config } }
        var flow: Int? { setup.flow }
        var battery: NodeState? { setup.battery }
        var storage: Int? { setup.storage }

        /// Progress widget `progress` of `config`, reading the flow widgets `flows` (the machines
        /// built before it, by position).
        init(config progress: ProgressWidgetConfig, in config: FlowConfig, flows: [WidgetMachine], sources index: [String: Int]) {
            let flowConfig = config.flowWidget(for: progress)
            let flow = flowConfig.flatMap { found in config.widgets.firstIndex { $0.name == found.name } }
            var battery: NodeState?
            var storage: Int?
            if case .battery(let gauge) = progress.measure, let node = gauge.node(besides: flowConfig) {
                battery = NodeState(
                    place: .storage, config: node, terms: Term.list(of: node.rate, sources: index), level: node.level.map { index[$0]! },
                    accounts: [], shown: nil, maxGapSeconds: SourceConfig.defaultMaxGapSeconds)
                let nodes = flow.map { flows[$0].flow!.nodes } ?? []
                if let found = nodes.firstIndex(where: { $0.place == .storage }), nodes[found].config.rate == node.rate, nodes[found].total != nil {
                    storage = found
                }
            }
            setup = Setup(config: progress, flow: flow, battery: battery, storage: storage)
        }

        /// Every source whose reading can change the bar: its battery's rate, level and the flow
        /// storage's counter whose total it shows; otherwise every source of the flow widget it reads.
        func sourcesRead(flows: [WidgetMachine]) -> Set<Int> {
            guard let battery else { return flow.map { flows[$0].reads } ?? [] }
            var read = battery.terms.map(\.source) + (battery.level.map { [$0] } ?? [])
            if let flow, let storage, let counter = flows[flow].flow!.nodes[storage].counter { read.append(counter) }
            return Set(read)
        }
    }
}
