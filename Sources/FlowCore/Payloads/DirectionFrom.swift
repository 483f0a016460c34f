/// `direction:`: a magnitude whose direction is another source's (`sign:` reads it from a field of
/// the same message). Some bridges publish a battery's power as a magnitude and its direction as
/// flags on other topics (LG ESS through pyess: `…/direction/is_battery_charging_` and
/// `…/is_battery_discharging_`, each 0 or 1); others have a signed number of the same flow
/// elsewhere, whose sign is all that is read.
///
/// Generic over how a source is named: the config's names (`DirectionSource`), the engine's
/// positions in its bank, the loader's names with where they were written. One judgement serves all.
public enum DirectionFrom<Source> {
    /// 0/1 flags: `positive` reads 1 while the flow is + (importing, filling), `negative` while it
    /// is −. With both, both at 0 is no flow (the battery idles) and both at 1 a contradiction;
    /// with one, its 0 means the other direction.
    case flags(positive: Source?, negative: Source?)
    /// A signed number of the same flow: its sign is the direction, 0 is no flow.
    case signOf(Source)

    /// The sources it reads, flags first in the order positive, negative.
    public var sources: [Source] {
        switch self {
        case .flags(let positive, let negative): [positive, negative].compactMap { $0 }
        case .signOf(let source): [source]
        }
    }

    /// The sources read as 0/1 flags.
    public var flags: [Source] {
        if case .flags = self { return sources }
        return []
    }

    /// The same direction with its sources named another way.
    public func map<Other>(_ transform: (Source) -> Other) -> DirectionFrom<Other> {
        switch self {
        case .flags(let positive, let negative): .flags(positive: positive.map(transform), negative: negative.map(transform))
        case .signOf(let source): .signOf(transform(source))
        }
    }

    /// The direction the sources' readings give (`read` is nil for a source that has not read).
    /// A flag reads 0 or 1 (the engine refuses anything else).
    public func verdict(_ read: (Source) -> Double?) -> DirectionVerdict {
        switch self {
        case .signOf(let source):
            guard let value = read(source) else { return .notYet }
            return .known(value > 0 ? .positive : value < 0 ? .negative : .neither)
        case .flags(let positive, let negative):
            // A flag named and not yet read leaves the direction unknown: never a guess.
            let plus = positive.map { read($0).map { $0 != 0 } }
            let minus = negative.map { read($0).map { $0 != 0 } }
            if plus == .some(nil) || minus == .some(nil) { return .notYet }
            switch (plus ?? nil, minus ?? nil) {
            case (true?, true?): return .contradiction
            case (true?, _), (nil, false?): return .known(.positive)
            case (_, true?), (false?, nil): return .known(.negative)
            case (false?, false?): return .known(.neither)
            case (nil, nil): return .notYet
            }
        }
    }
}

extension DirectionFrom: Sendable where Source: Sendable {}
extension DirectionFrom: Equatable where Source: Equatable {}
extension DirectionFrom: Hashable where Source: Hashable {}

/// A direction as the config names its sources.
public typealias DirectionSource = DirectionFrom<String>

/// Which way a flow goes.
public enum FlowDirection: Sendable, Hashable {
    /// Importing, filling.
    case positive
    /// Exporting, draining.
    case negative
    /// No flow: both flags at 0, or a signed number at 0.
    case neither
}

/// What a direction's sources say now.
public enum DirectionVerdict: Sendable, Hashable {
    case known(FlowDirection)
    /// A source has not read yet: the magnitude has no sign, and its nodes are not shown.
    case notYet
    /// Both flags read 1.
    case contradiction

    /// `magnitude` with this direction: + or − its size, 0 for no flow; nil when the direction is
    /// unknown.
    public func signed(_ magnitude: Double) -> Double? {
        guard case .known(let direction) = self else { return nil }
        switch direction {
        case .positive: return abs(magnitude)
        case .negative: return -abs(magnitude) + 0.0
        case .neither: return 0
        }
    }
}
