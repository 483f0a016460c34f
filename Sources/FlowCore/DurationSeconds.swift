extension Duration {
    /// The duration in seconds, fractions included, to the nanosecond.
    ///
    /// Through whole nanoseconds of its count of attoseconds: `self / .seconds(1)` divides two
    /// 128-bit counts as floating point, some 250 instructions, where this takes about 60; the
    /// daemon asks at every message (`Bridge.noteClock`, the wall clock's progress against the
    /// monotonic clock's).
    public var seconds: Double {
        Double(Int64(clamping: attoseconds / 1_000_000_000)) / 1e9
    }
}
