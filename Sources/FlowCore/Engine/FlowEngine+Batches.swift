import FoundationEssentials

/// A backlog read in one go: the daemon fell behind (a broker that sends every retained topic at a
/// connect, a burst of meters faster than a small machine keeps up with), and the readings that
/// had queued up behind each other are one moment for the widget.
///
/// Each reading is taken as it comes (decoded, checked, its energy counted: totals are exactly
/// those of readings taken one by one); the widgets it moves wait for the batch's end and are
/// offered once, with the latest state. A document pushed for each reading of a backlog would show
/// a state already overtaken by readings at hand, and would keep the newest one from the widget
/// for as long as the older pushes take. A widget waits at most `batchWaitSeconds` (a deadline of
/// its own, `nextDeadline`): a flood that never lets the daemon catch up still pushes. Batches
/// are for widgets that push every reading at once (`settle: 0s`); a settling widget's window
/// already makes one push of a burst.
extension FlowEngine {
    /// How long a widget waits for the end of a batch, counted from its first reading that waited.
    public static let batchWaitSeconds = 0.1

    /// The batch has ended (the daemon has read every message that had come in): the widgets its
    /// readings left waiting are offered, as of the latest event. Nothing waits after a batch of
    /// none.
    public mutating func endBatch() -> [Output] {
        var out: [Output] = []
        guard let now = clock else { return out }
        for position in board.widgets.indices where board.widgets[position].batchedSince != nil {
            offer(position, at: now, urgent: false, into: &out)
        }
        return out
    }

    /// Whether a widget's offer waits for the batch's end: a reading `inBatch`, unless the widget
    /// has waited `batchWaitSeconds` already (or the clock went back past its first wait).
    /// `since` is the widget's `batchedSince`, set at the first wait.
    static func waits(inBatch: Bool, since: inout Date?, at now: Date) -> Bool {
        guard inBatch else { return false }
        guard let first = since else {
            since = now
            return true
        }
        return (0..<batchWaitSeconds).contains(now.timeIntervalSince(first))
    }
}
