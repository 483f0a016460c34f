import FoundationEssentials

/// Whether the derived output's clamp at 0 persists: the evidence of a wrong sign.
///
/// A balance that only a flipped exchange or storage could make positive means a sign is wrong,
/// but meters report a moment apart: at dusk the solar reading of 0 W can come before the
/// battery's, and for those milliseconds the balance is negative though every sign is right. One
/// such evaluation is no evidence; a clamp that holds for most evaluations over `windowMinutes` is.
/// Kept in one bucket per minute, so the memory is bounded however often it is asked.
struct ClampWatch: Sendable {
    static let windowMinutes = 10

    private struct Bucket: Sendable {
        var minute = Int.min
        var evaluations = 0
        var clamped = 0
    }

    private var buckets = [Bucket](repeating: Bucket(), count: windowMinutes)

    /// Records one evaluation at `now`. Returns true when the clamp has held for most evaluations
    /// over the whole window: time to say so. The evidence then starts afresh, so a sign error that
    /// persists is said once per window, not at every evaluation.
    mutating func record(clamped: Bool, at now: Date) -> Bool {
        let minute = Int((now.timeIntervalSince1970 / 60).rounded(.down))
        let slot = ((minute % Self.windowMinutes) + Self.windowMinutes) % Self.windowMinutes
        if buckets[slot].minute != minute { buckets[slot] = Bucket(minute: minute) }
        buckets[slot].evaluations += 1
        if clamped { buckets[slot].clamped += 1 }
        guard clamped else { return false }
        var evaluations = 0
        var clampedCount = 0
        var oldest = minute
        for bucket in buckets where bucket.minute <= minute && bucket.minute > minute - Self.windowMinutes {
            evaluations += bucket.evaluations
            clampedCount += bucket.clamped
            oldest = min(oldest, bucket.minute)
        }
        guard minute - oldest >= Self.windowMinutes - 1, 2 * clampedCount > evaluations else { return false }
        reset()
        return true
    }

    /// Forgets the evidence (the clock stepped, or it was just reported).
    mutating func reset() {
        buckets = [Bucket](repeating: Bucket(), count: Self.windowMinutes)
    }
}
