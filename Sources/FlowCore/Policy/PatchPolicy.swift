import FoundationEssentials

/// Decides when a widget is pushed and what goes out (DESIGN §1.7), as a state machine: the engine
/// offers the widget's current (quantized) content, the policy answers with a patch or nothing. One
/// policy serves both templates.
///
/// - A rate moves only past its deadband, except to or from 0 (a widget stuck at "15 W" all night is
///   a lie) and on a change of direction. A flow's rates are held here, against the document the
///   widget shows; a progress document carries its rate only inside texts (`Charging 800 W`), so
///   the engine holds that figure before it writes them (`PatchPolicyConfig.holding`, one rule).
/// - Readings of one moment settle first: meters publish milliseconds to a second apart, and a
///   widget offered between them shows a state that never was (the house at 0 W because the solar
///   reading came before the battery's). A burst of readings within `settle` of its first one makes
///   one offer, when the window closes (`deadline`).
/// - A widget is pushed at most once per `minInterval`; a change held back is pushed when the
///   interval ends (`deadline`), with whatever the state is then: the last change is never dropped.
/// - The first push, a slot appearing or disappearing, a direction change (import ↔ export,
///   filling ↔ draining; a bar's trend up ↔ down) and a progress window appearing or disappearing
///   go out as soon as they have settled; the day rollover at once.
/// - What goes out is the merge patch between the last pushed document and the new one.
public struct PatchPolicy: Sendable {
    public let config: PatchPolicyConfig
    /// The document the widget shows now (the last one pushed).
    public private(set) var delivered: WidgetContent?
    /// `delivered` when it is a flow, kept unboxed: a flow is offered at every reading, and holding
    /// and comparing against a copy taken out of the box each time cost more than the offer itself.
    /// Set with `delivered`, from the same flow.
    private var deliveredFlow: FlowContent?
    public private(set) var lastPushAt: Date?
    /// When a change held back by `minInterval` is due.
    public private(set) var trailingAt: Date?
    /// When the burst of readings being waited for has settled.
    public private(set) var settlesAt: Date?

    public init(config: PatchPolicyConfig) { self.config = config }

    /// When the policy next wants an offer: a burst settled, or a held-back change due. While a
    /// burst settles, the held-back change waits for it: offered before the burst's end it would
    /// only be held again, and a deadline already past is one the engine no longer ticks at, so
    /// meters that report every second (each burst opening the next window) would hide the end of
    /// every window and nothing would go out after the first interval.
    public var deadline: Date? { settlesAt ?? trailingAt }

    /// A reading reached the widget at `now`. Returns true when it is to be offered at once (no
    /// `settle`); otherwise the widget waits for the rest of the moment, until `settlesAt`.
    public mutating func readingArrived(at now: Date) -> Bool {
        guard config.settleSeconds > 0 else { return true }
        if !isSettling(at: now) { settlesAt = now.addingTimeInterval(config.settleSeconds) }
        return false
    }

    /// True while a burst is still coming in at `now`: an ordinary offer waits for its end. A window
    /// that ends further ahead than `settle` was opened under a clock that has since gone back.
    public func isSettling(at now: Date) -> Bool {
        guard let settlesAt else { return false }
        return now < settlesAt && settlesAt.timeIntervalSince(now) <= config.settleSeconds
    }

    /// What to send.
    public struct Push: Sendable, Equatable {
        /// The merge patch of the content; the whole content on the first push. A flow's is
        /// written as text when it is made, and made into JSON when it is read (see `ContentPatch`).
        public var contentPatch: ContentPatch
        /// The whole content after the push.
        public var document: WidgetContent
        public var isFullContent: Bool
        /// What of `document` shows held readings: the engine's mark (the widget sees only the
        /// gray it is sent), which the policy passes on and never reads.
        public var held: HeldMark = .none

        /// The merge patch as JSON.
        public var patch: JSONValue { contentPatch.json }
        public var content: JSONValue { document.json }
    }

    /// Rounds a value to a multiple of `step`, without binary noise (0.1 steps print as `12.4`).
    /// A step too fine to divide by (`1e-320`: value / step is no finite number) leaves the value
    /// as it is, as a step of 0 does; an infinity is no rate or total the widget takes.
    public static func quantize(_ value: Double, step: Double) -> Double {
        guard step > 0 else { return value + 0.0 }
        let inverse = 1 / step
        let rounded = if step < 1, abs(inverse - inverse.rounded()) < 1e-9 {
            (value * inverse.rounded()).rounded() / inverse.rounded()
        } else {
            (value / step).rounded() * step
        }
        return (rounded.isFinite ? rounded : value) + 0.0
    }

    /// Offers the widget's current content at `now`. `urgent` (the day rolled over) skips the
    /// interval and the settling. Returns the push to make, or nil when nothing is due.
    public mutating func offer(_ candidate: WidgetContent, at now: Date, urgent: Bool) -> Push? {
        if case .flow(let flow) = candidate { return offer(flow: flow, at: now, urgent: urgent) }
        let due = urgent || intervalOver(at: now) || delivered.map { isPrompt(candidate, after: $0) } ?? true
        switch decide(unchanged: delivered == candidate, due: due, at: now, urgent: urgent) {
        case .nothing: return nil
        case .whole: return push(candidate, flow: nil, patch: ContentPatch(candidate.json), at: now, full: true)
        // Documents that differ have a patch that is not empty (a valid document holds no NaN,
        // the one value that differs from itself and prints like another); it is made when read.
        case .patch: return push(candidate, flow: nil, patch: ContentPatch(from: delivered!, to: candidate), at: now, full: false)
        }
    }

    /// `offer(.flow(candidate), …)`: the rates are held, and the flow compared, against the flow
    /// delivered where it is kept, unboxed. With `derivesOutput` (the output is the balance, and
    /// every term it needs is drawn) the output shown is the balance of the rates shown, after
    /// their rounding and deadbands: the widget adds up, where each field moving past its own
    /// deadband would leave the home up to a deadband away from Solar + Grid − Battery.
    ///
    /// The candidate is consumed, and what is delivered is read in place (`shape`, `patch`, not
    /// mutating): a flow copied holds a retain of each of its texts, and the copies this offer
    /// made at every reading were a tenth of the daemon's instructions.
    public mutating func offer(flow candidate: consuming FlowContent, at now: Date, urgent: Bool, derivesOutput: Bool = false) -> Push? {
        var shaped = candidate
        let (unchanged, prompt) = shape(&shaped, derivesOutput: derivesOutput)
        let due = urgent || intervalOver(at: now) || prompt
        let decision = decide(unchanged: unchanged, due: due, at: now, urgent: urgent)
        if case .nothing = decision { return nil }
        let document = WidgetContent.flow(shaped)
        let patch = patch(to: shaped, document: document)
        return push(document, flow: consume shaped, patch: patch, at: now, full: decision == .whole)
    }

    /// Holds the candidate's rates against the flow delivered and derives its output; then whether
    /// it is the flow delivered, and whether it goes out at once (the first flow always does).
    private func shape(_ flow: inout FlowContent, derivesOutput: Bool) -> (unchanged: Bool, prompt: Bool) {
        if let deliveredFlow { hold(&flow, against: deliveredFlow) }
        if derivesOutput, flow.output?.rate != nil {
            var inputsW = 0.0
            for index in flow.inputs?.indices ?? 0..<0 { inputsW += flow.inputs![index].rate ?? 0 }
            let balanceW = inputsW + (flow.exchange?.rate ?? 0) - (flow.storage?.rate ?? 0)
            // The terms are multiples of the step already: quantizing only drops the float noise.
            flow.output!.rate = Self.quantize(max(0, balanceW), step: config.rateStep) + 0.0
        }
        guard let deliveredFlow else { return (false, true) }
        return (flow == deliveredFlow, isPrompt(flow, after: deliveredFlow))
    }

    /// The patch from the flow delivered to `flow` (whose document is `document`), its text
    /// written now, while both flows are at hand unboxed; the whole document when nothing was
    /// delivered yet. Documents that differ have a patch that is not empty (a valid document
    /// holds no NaN, the one value that differs from itself and prints like another).
    private func patch(to flow: FlowContent, document: WidgetContent) -> ContentPatch {
        guard let delivered else { return ContentPatch(document.json) }
        // A progress delivered before (the config's template changed): the documents' JSON diff.
        guard let deliveredFlow else { return ContentPatch(from: delivered, to: document) }
        return ContentPatch(from: deliveredFlow, to: flow, documents: (delivered, document))
    }

    /// `minInterval` has passed since the last push (or the clock went back before it).
    private func intervalOver(at now: Date) -> Bool {
        lastPushAt.map { now < $0 || now.timeIntervalSince($0) >= config.minIntervalSeconds } ?? true
    }

    /// What an offer sends: nothing, the whole document (the first push), or the patch from the
    /// document delivered.
    private enum Decision { case nothing, whole, patch }

    /// The rules of an offer (rates held): `unchanged` when it is the document delivered; `due`
    /// when a change may go out now (urgent, the interval over, or prompt).
    private mutating func decide(unchanged: Bool, due: Bool, at now: Date, urgent: Bool) -> Decision {
        if isSettling(at: now) {
            guard urgent else { return .nothing }
        } else {
            settlesAt = nil
        }
        guard delivered != nil else { return .whole }
        guard !unchanged else {
            trailingAt = nil
            return .nothing
        }
        guard due else {
            trailingAt = lastPushAt!.addingTimeInterval(config.minIntervalSeconds)
            return .nothing
        }
        return .patch
    }

    /// Takes over what another policy (of a config being replaced) delivered, so that the next push
    /// is the patch from what the widget shows, not a full document; and a burst it was waiting
    /// for, so that the burst still goes out.
    public mutating func adopt(_ other: PatchPolicy) {
        delivered = other.delivered
        deliveredFlow = other.deliveredFlow
        lastPushAt = other.lastPushAt
        trailingAt = nil
        settlesAt = other.settlesAt
    }

    /// The wall clock stepped by `seconds` without that time passing: the interval and the
    /// settling count what really passed.
    mutating func shift(by seconds: Double) {
        lastPushAt = lastPushAt?.addingTimeInterval(seconds)
        trailingAt = trailingAt?.addingTimeInterval(seconds)
        settlesAt = settlesAt?.addingTimeInterval(seconds)
    }

    /// `flow`: the content's flow, unboxed, when it is one; taken over, not copied (a flow's copy
    /// retains each of its texts).
    private mutating func push(_ content: WidgetContent, flow: consuming FlowContent?, patch: ContentPatch, at now: Date, full: Bool) -> Push {
        delivered = content
        deliveredFlow = flow
        lastPushAt = now
        trailingAt = nil
        return Push(contentPatch: patch, document: content, isFullContent: full)
    }

    /// A change that goes out as soon as it has settled, whatever the interval: a flow's slot
    /// appearing or disappearing or its exchange or storage changing direction; a bar's trend
    /// turning from up to down or back, or its window appearing or disappearing (a window left
    /// standing on a draining battery would go on filling the bar).
    func isPrompt(_ new: WidgetContent, after old: WidgetContent) -> Bool {
        if case .flow(let new) = new, case .flow(let old) = old { return isPrompt(new, after: old) }
        if case .progress(let new) = new, case .progress(let old) = old {
            let reversal = (new.trend == .up && old.trend == .down) || (new.trend == .down && old.trend == .up)
            return reversal || (new.startDate == nil) != (old.startDate == nil)
        }
        return true  // the widget changed its template (a reloaded config)
    }

    func isPrompt(_ new: FlowContent, after old: FlowContent) -> Bool {
        Self.slots(of: new) != Self.slots(of: old) || reversed(new.exchange, from: old.exchange)
            || reversed(new.storage, from: old.storage)
    }

    /// Which slots are drawn, and how many inputs.
    static func slots(of content: FlowContent) -> Slots {
        Slots(inputs: content.inputs?.count ?? -1, output: content.draws(.output), storage: content.draws(.storage), exchange: content.draws(.exchange))
    }

    struct Slots: Equatable {
        var inputs: Int
        var output, storage, exchange: Bool
    }

    /// Import ↔ export, filling ↔ draining: both sides clearly away from 0, in opposite directions.
    func reversed(_ node: FlowNode?, from old: FlowNode?) -> Bool {
        guard let rate = node?.rate, let oldRate = old?.rate else { return false }
        return config.direction(ofRate: rate) * config.direction(ofRate: oldRate) < 0
    }

    /// Holds every rate of `flow` that moved less than the deadband at what the widget shows, in
    /// place. (A progress document comes held: see the type's note.)
    private func hold(_ flow: inout FlowContent, against old: FlowContent) {
        // Only the rates cross: a node passed whole is copied, its texts retained and released.
        if let count = old.inputs?.count, flow.inputs?.count == count {
            for index in 0..<count {
                if let rate = flow.inputs![index].rate { flow.inputs![index].rate = config.holding(rate, shown: old.inputs![index].rate) }
            }
        }
        if let rate = flow.output?.rate { flow.output!.rate = config.holding(rate, shown: old.output?.rate) }
        if let rate = flow.storage?.rate { flow.storage!.rate = config.holding(rate, shown: old.storage?.rate) }
        if let rate = flow.exchange?.rate { flow.exchange!.rate = config.holding(rate, shown: old.exchange?.rate) }
    }
}
