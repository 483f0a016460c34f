import FlowCore
import Testing

@Suite struct MergePatchTests {
    /// RFC 7396 Appendix A, every row: original, patch, result.
    static let appendixA: [(String, String, String)] = [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ]

    @Test(arguments: appendixA)
    func appendixAExample(original: String, patch: String, result: String) throws {
        let applied = MergePatch.apply(try JSONValue(parsing: patch), to: try JSONValue(parsing: original))
        #expect(applied == (try JSONValue(parsing: result)))
    }

    @Test func specPatchChangesOnlyTheExchangeRate() throws {
        let document = try JSONValue(parsing: SpecExamples.homeEnergy)
        let patch = try JSONValue(parsing: #"{"content": {"flow": {"exchange": {"rate": -900}}}}"#)
        let patched = MergePatch.apply(patch, to: document)
        let exchange = patched["content"]?["flow"]?["exchange"]
        #expect(exchange?["rate"] == -900)
        #expect(exchange?["name"] == "Grid")
        #expect(exchange?["icon"] == "bolt.fill")
        #expect(exchange?["total"] == 3.1)
        for slot in ["inputs", "output", "storage"] {
            #expect(patched["content"]?["flow"]?[slot] == document["content"]?["flow"]?[slot])
        }
        #expect(patched["content"]?["label"] == "Power")
        // And the diff of the two documents is exactly that patch.
        #expect(MergePatch.diff(from: document, to: patched) == patch)
    }

    @Test func diffReplacesArraysWholeAndNullsRemovedKeys() {
        let old: JSONValue = ["flow": ["inputs": [["rate": 1], ["rate": 2]], "storage": ["rate": 5]], "unit": "W"]
        let new: JSONValue = ["flow": ["inputs": [["rate": 1], ["rate": 3]]], "unit": "W"]
        #expect(MergePatch.diff(from: old, to: new) == ["flow": ["inputs": [["rate": 1], ["rate": 3]], "storage": nil]])
        #expect(MergePatch.diff(from: new, to: new) == nil)
    }

    /// A seeded random property test: for documents without nulls inside objects,
    /// `apply(diff(a, b), a) == b`.
    @Test(arguments: [1, 2, 3])
    func applyOfDiffRebuildsTheTarget(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<2000 {
            let a = random.document(depth: 0)
            let b = random.mutate(a, depth: 0)
            if let patch = MergePatch.diff(from: a, to: b) {
                #expect(MergePatch.apply(patch, to: a) == b, "a: \(a)\nb: \(b)\npatch: \(patch)")
            } else {
                #expect(a == b)
            }
        }
    }
}

/// A small deterministic generator (SplitMix64) so the property test is the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static let keys = ["a", "b", "c", "rate", "name", "total", "flow", ""]

    /// A random value; objects never hold null (merge patches cannot express that).
    mutating func document(depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 7), using: &self) {
        case 0: return .bool(Bool.random(using: &self))
        case 1: return .number(Double(Int.random(in: -2000...2000, using: &self)) / 10)
        case 2: return .string(Self.keys.randomElement(using: &self)!)
        case 3: return depth == 0 ? object(depth: depth) : .number(0)
        case 4, 5: return object(depth: depth)
        default:
            let count = Int.random(in: 0...3, using: &self)
            return .array((0..<count).map { _ in Bool.random(using: &self) ? .null : document(depth: depth + 1) })
        }
    }

    mutating func object(depth: Int) -> JSONValue {
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &self) {
            members[Self.keys.randomElement(using: &self)!] = document(depth: depth + 1)
        }
        return .object(members)
    }

    /// A variation of `value`: some members kept, some changed, removed or added.
    mutating func mutate(_ value: JSONValue, depth: Int) -> JSONValue {
        guard case .object(var members) = value, Int.random(in: 0..<6, using: &self) > 0 else {
            return Bool.random(using: &self) ? value : document(depth: depth)
        }
        for key in members.keys {
            switch Int.random(in: 0..<5, using: &self) {
            case 0: members.removeValue(forKey: key)
            case 1: members[key] = mutate(members[key]!, depth: depth + 1)
            case 2: members[key] = document(depth: depth + 1)
            default: break
            }
        }
        if Bool.random(using: &self) { members[Self.keys.randomElement(using: &self)!] = document(depth: depth + 1) }
        return .object(members)
    }
}
