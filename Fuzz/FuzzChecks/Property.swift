/// A property a fuzz target checks on one input. `check` returns what it found wrong (nothing when
/// the property held); a crash inside the code under test is a finding of its own.
///
/// One definition serves three runners: libFuzzer (`make fuzz`, which stops at the first
/// violation and keeps the input), the replay of a corpus directory by the target built without
/// the fuzzer, and `swift test`, which replays the committed corpus (`Fuzz/Corpus/<name>`) so every
/// input that ever failed stays a regression test.
public protocol FuzzProperty {
    /// The target's name: its corpus folder and, with `Fuzzer` appended, its executable.
    static var name: String { get }
    static func check(_ input: [UInt8]) -> [String]
    /// Folders of the repository beside `Fuzz/Corpus/<name>` whose files are seeds too.
    static var sharedSeedFolders: [String] { get }
}

extension FuzzProperty {
    public static var sharedSeedFolders: [String] { [] }
}

/// Every fuzz target, for the runners that serve them all.
public var fuzzProperties: [any FuzzProperty.Type] {
    [PayloadDecoderProperty.self, ConfigProperty.self, MergePatchProperty.self]
}
