import FoundationEssentials

/// Decides when a widget is pushed and what goes out (DESIGN §1.7), as a state machine: the engine
/// offers the widget's current (quantized) content, the policy answers with a patch or nothing.
///
/// - A rate moves only past its deadband, except to or from 0 (a widget stuck at "15 W" all night is
///   a lie) and on a change of direction.
/// - Readings of one moment settle first: meters publish milliseconds to a second apart, and a
///   widget offered between them shows a state that never was (the house at 0 W because the solar
///   reading came before the battery's). A burst of readings within `settle` of its first one makes
///   one offer, when the window closes (`deadline`).
/// - A widget is pushed at most once per `minInterval`; a change held back is pushed when the
///   interval ends (`deadline`), with whatever the state is then: the last change is never dropped.
/// - The first push, a slot appearing or disappearing and a direction change (import ↔ export,
///   filling ↔ draining) go out as soon as they have settled; the day rollover at once.
/// - What goes out is the merge patch between the last pushed document and the new one.
public struct PatchPolicy: Sendable {
    public let config: PatchPolicyConfig
    /// The document the widget shows now (the last one pushed).
    public private(set) var delivered: FlowContent?
    public private(set) var lastPushAt: Date?
    /// When a change held back by `minInterval` is due.
    public private(set) var trailingAt: Date?
    /// When the burst of readings being waited for has settled.
    public private(set) var settlesAt: Date?

    public init(config: PatchPolicyConfig) { self.config = config }

    /// When the policy next wants an offer: a burst settled, or a held-back change due.
    public var deadline: Date? {
        guard let settlesAt else { return trailingAt }
        return trailingAt.map { min($0, settlesAt) } ?? settlesAt
    }

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
        /// The merge patch of the content; the whole content on the first push.
        public var patch: JSONValue
        /// The whole content after the push.
        public var document: FlowContent
        public var isFullContent: Bool

        public var content: JSONValue { document.json }
    }

    /// Rounds a value to a multiple of `step`, without binary noise (0.1 steps print as `12.4`).
    public static func quantize(_ value: Double, step: Double) -> Double {
        guard step > 0 else { return value + 0.0 }
        let inverse = 1 / step
        if step < 1, abs(inverse - inverse.rounded()) < 1e-9 {
            return (value * inverse.rounded()).rounded() / inverse.rounded() + 0.0
        }
        return (value / step).rounded() * step + 0.0
    }

    /// Offers the widget's current content at `now`. `urgent` (the day rolled over) skips the
    /// interval and the settling. Returns the push to make, or nil when nothing is due.
    public mutating func offer(_ candidate: FlowContent, at now: Date, urgent: Bool) -> Push? {
        if isSettling(at: now) {
            guard urgent else { return nil }
        } else {
            settlesAt = nil
        }
        guard let delivered else {
            return push(candidate, patch: candidate.json, at: now, full: true)
        }
        let shaped = applyingDeadband(to: candidate, against: delivered)
        guard let patch = FlowContent.mergePatch(from: delivered, to: shaped) else {
            trailingAt = nil
            return nil
        }
        let intervalOver = lastPushAt.map { now < $0 || now.timeIntervalSince($0) >= config.minIntervalSeconds } ?? true
        if urgent || intervalOver || Self.slots(of: shaped) != Self.slots(of: delivered)
            || reversed(shaped.exchange, from: delivered.exchange) || reversed(shaped.storage, from: delivered.storage)
        {
            return push(shaped, patch: patch, at: now, full: false)
        }
        trailingAt = lastPushAt!.addingTimeInterval(config.minIntervalSeconds)
        return nil
    }

    /// Takes over what another policy (of a config being replaced) delivered, so that the next push
    /// is the patch from what the widget shows, not a full document; and a burst it was waiting
    /// for, so that the burst still goes out.
    public mutating func adopt(_ other: PatchPolicy) {
        delivered = other.delivered
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

    private mutating func push(_ content: FlowContent, patch: JSONValue, at now: Date, full: Bool) -> Push {
        delivered = content
        lastPushAt = now
        trailingAt = nil
        return Push(patch: patch, document: content, isFullContent: full)
    }

    /// Which slots are drawn, and how many inputs.
    static func slots(of content: FlowContent) -> [Int] {
        [content.inputs?.count ?? -1, content.output == nil ? 0 : 1, content.storage == nil ? 0 : 1, content.exchange == nil ? 0 : 1]
    }

    /// +1 (importing, filling), −1 (exporting, draining) or 0 when the rate is within the deadband of 0.
    func direction(of node: FlowNode?) -> Int {
        guard let rate = node?.rate else { return 0 }
        let threshold = max(config.rateDeadband, config.rateStep)
        return rate >= threshold ? 1 : rate <= -threshold ? -1 : 0
    }

    /// Import ↔ export, filling ↔ draining: both sides clearly away from 0, in opposite directions.
    func reversed(_ node: FlowNode?, from old: FlowNode?) -> Bool {
        direction(of: node) * direction(of: old) < 0
    }

    private func applyingDeadband(to candidate: FlowContent, against delivered: FlowContent) -> FlowContent {
        // A reversal always passes: both sides are at least a deadband away from 0.
        func hold(_ node: FlowNode?, _ old: FlowNode?) -> FlowNode? {
            guard var node, let old, let rate = node.rate, let oldRate = old.rate else { return node }
            if abs(rate - oldRate) < config.rateDeadband, rate != 0, oldRate != 0 {
                node.rate = oldRate
            }
            return node
        }
        var shaped = candidate
        if let inputs = candidate.inputs, let old = delivered.inputs, inputs.count == old.count {
            shaped.inputs = zip(inputs, old).map { hold($0, $1)! }
        }
        shaped.output = hold(candidate.output, delivered.output)
        shaped.storage = hold(candidate.storage, delivered.storage)
        shaped.exchange = hold(candidate.exchange, delivered.exchange)
        return shaped
    }
}
