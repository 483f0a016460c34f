import FoundationEssentials

extension FlowEngine {
    /// One widget of either template as the engine delivers it: its name, the sources whose
    /// readings can change it, its patch policy and its wait for a batch's end, which both
    /// templates share; and the template's own state, exactly one of `flow` and `progress`. What
    /// is the same for both templates is done once for every widget (offers, deadlines, clock
    /// steps, a reload's takeover); what differs is one dispatch on the template.
    ///
    /// The template's state is an optional of its own rather than an enum's payload: a flow
    /// widget's accounts move at every message, and a struct in an enum case is copied, arrays
    /// and all, to be changed, where `flow!` changes it in place.
    struct WidgetMachine: Sendable {
        let name: String
        /// Every source whose reading can change the widget's document.
        let reads: Set<Int>
        var policy: PatchPolicy
        /// When a reading of a batch first left the widget waiting for the batch's end (`endBatch`).
        var batchedSince: Date?
        var flow: FlowWidget?
        var progress: ProgressWidget?

        init(flow: FlowWidget) {
            name = flow.config.name
            reads = flow.sourcesRead
            policy = PatchPolicy(config: flow.config.policy)
            self.flow = flow
        }

        init(progress: ProgressWidget, reads: Set<Int>) {
            name = progress.config.name
            self.reads = reads
            policy = PatchPolicy(config: progress.config.policy)
            self.progress = progress
        }

        /// Takes over what `previous` (the widget of the same name in the engine of a config being
        /// reloaded) was sent, so the next push is a patch from what the widget shows, and what its
        /// template's next document builds on: the balance last known, the rate and level shown.
        mutating func adopt(_ previous: WidgetMachine) {
            policy.adopt(previous.policy)
            if flow != nil, let old = previous.flow { flow!.lastKnownBalance = old.lastKnownBalance }
            if progress != nil, let old = previous.progress {
                progress!.shownRateW = old.shownRateW
                progress!.shownLevelAt = old.shownLevelAt
            }
        }
    }

    /// Every widget the engine drives, and the closed days of the month their money adds to.
    struct WidgetBoard: Sendable {
        /// The flow widgets first, in the config's order (a bar's `flow` is a position here), then
        /// the progress widgets: one loop over them offers a bar after the flow whose totals it reads.
        var widgets: [WidgetMachine]
        /// How many of `widgets` are flow widgets: the first ones.
        let flowCount: Int
        /// The closed days of the month and the billing month: their money with today's is what a
        /// progress bar of `period: month` and a subtitle of the month show. The daemon seeds it
        /// from the day book at its start; the engine adds each day it closes.
        var periods: PeriodTotals

        /// The widgets of a config the Daemon has checked (every name a node refers to exists), at
        /// the start of a day.
        init(config: FlowConfig) {
            let index = config.sourcePositions
            var widgets = config.widgets.map { WidgetMachine(flow: FlowWidget(config: $0, in: config, sources: index)) }
            flowCount = widgets.count
            let flows = widgets
            for progress in config.progressWidgets {
                let bar = ProgressWidget(config: progress, in: config, flows: flows, sources: index)
                widgets.append(WidgetMachine(progress: bar, reads: bar.sourcesRead(flows: flows)))
            }
            self.widgets = widgets
            periods = PeriodTotals(billingDay: config.billingDay)
        }
    }
}
