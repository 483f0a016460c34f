/// Randomness as a pure function: the same seed, stream and index always give the same number, so
/// a simulated day is the same day however it is stepped, resumed or replayed. No generator state
/// is carried anywhere: every draw is `hash(seed, stream, index)`.
public struct SeededNoise: Sendable, Hashable {
    public let seed: UInt64

    public init(seed: UInt64) { self.seed = seed }

    /// What a draw is for: each use of randomness has its own stream, so adding one never shifts another.
    enum Stream: UInt64 {
        case dayCloudiness = 1, passingClouds, cloudShape, gridJitter, baseLoad, fridge, kettle, oven
        case initialCharge, counters, voltage, powerFactor
    }

    /// A uniformly distributed number in 0..<1.
    func unit(_ stream: Stream, _ index: Int) -> Double {
        Double(hash(stream, index) >> 11) * 0x1p-53
    }

    /// A number in `range`.
    func uniform(_ stream: Stream, _ index: Int, in range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit(stream, index) * (range.upperBound - range.lowerBound)
    }

    /// Smooth noise in 0...1 over time: random values every `periodSeconds`, joined by smoothstep,
    /// so clouds drift and loads wander instead of jumping from one second to the next.
    func smooth(_ stream: Stream, at seconds: Double, periodSeconds: Double) -> Double {
        let position = seconds / periodSeconds
        let cell = position.rounded(.down)
        let fraction = position - cell
        let index = Int(cell)
        let eased = fraction * fraction * (3 - 2 * fraction)
        let a = unit(stream, index)
        let b = unit(stream, index &+ 1)
        return a + (b - a) * eased
    }

    /// SplitMix64's finaliser, chained over the seed, the stream and the index: cheap, and every
    /// input bit reaches every output bit.
    private func hash(_ stream: Stream, _ index: Int) -> UInt64 {
        Self.mix(Self.mix(Self.mix(seed) ^ stream.rawValue) ^ UInt64(bitPattern: Int64(index)))
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
