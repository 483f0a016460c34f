import FlowCore
import FoundationEssentials
import TestSupport
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


@Suite struct FlowContentPatchTests {
    static func randomNode(_ random: inout SplitMix64) -> FlowNode? {
        guard Int.random(in: 0..<4, using: &random) > 0 else { return nil }
        return FlowNode(
            name: ["Solar", "Grid", nil].randomElement(using: &random)!, rate: Double(Int.random(in: -3...3, using: &random)) * 100,
            total: [nil, 1.5, 2.5].randomElement(using: &random)!, level: [nil, 50.0].randomElement(using: &random)!,
            icon: [nil, "bolt.fill"].randomElement(using: &random)!)
    }

    static func randomContent(_ random: inout SplitMix64) -> FlowContent {
        FlowContent(
            shared: SharedContent(label: ["Power", "Energy", nil].randomElement(using: &random)!, icon: [nil, "house"].randomElement(using: &random)!),
            unit: ["W", nil].randomElement(using: &random)!,
            inputs: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).compactMap { _ in randomNode(&random) },
            output: randomNode(&random), storage: randomNode(&random), exchange: randomNode(&random))
    }

    /// The model-level patch is exactly the JSON-level diff of the two documents.
    @Test func modelPatchEqualsTheDiffOfTheDocuments() {
        var random = SplitMix64(seed: 99)
        for _ in 0..<5000 {
            let old = Self.randomContent(&random)
            let new = Bool.random(using: &random) ? old : Self.randomContent(&random)
            #expect(FlowContent.mergePatch(from: old, to: new) == MergePatch.diff(from: old.json, to: new.json), "\(old.json) → \(new.json)")
        }
    }

    /// A push's patch is written straight from the two documents: the text is the diff's, byte
    /// for byte (keys in order, empty objects left out), and so is the value read from it.
    @Test func thePatchWrittenFromTheModelsIsTheDiffsText() {
        var random = SplitMix64(seed: 5)
        for _ in 0..<5000 {
            let old = Self.randomContent(&random)
            let new = Bool.random(using: &random) ? old : Self.randomContent(&random)
            let patch = ContentPatch(from: .flow(old), to: .flow(new))
            let diff = MergePatch.diff(from: old.json, to: new.json) ?? .object([:])
            var written: [UInt8] = [0x20]  // after what a line already holds
            patch.write(to: &written)
            #expect(written == [0x20] + diff.encoded(), "\(old.json) → \(new.json)")
            #expect(patch.json == diff)
        }
    }

    static let flowA = FlowContent(unit: "W", inputs: [FlowNode(name: "Solar", rate: 1200)], exchange: FlowNode(name: "Grid", rate: -300))
    static let flowB = FlowContent(unit: "W", inputs: [FlowNode(name: "Solar", rate: 1500)], exchange: FlowNode(name: "Grid", rate: -600))
    static let bar = WidgetContent.progress(ProgressContent(shared: SharedContent(label: "Battery"), value: 0.5))

    /// The patch policy's pushes, whatever came before: a flow after a flow (its text written from
    /// the two flows when it is made), after a progress bar (a widget whose reloaded config changed
    /// its template), and a bar after a flow. Each push's patch, as text and as a value, is the
    /// JSON diff of the two documents.
    @Test(arguments: [
        ("a flow after a flow", WidgetContent.flow(flowA), WidgetContent.flow(flowB)),
        ("a flow after a bar", bar, WidgetContent.flow(flowB)),
        ("a bar after a flow", WidgetContent.flow(flowA), bar),
    ])
    func aPolicysPatchIsTheDiffOfWhatItDeliveredAndWhatItPushes(_ name: String, first: WidgetContent, second: WidgetContent) throws {
        var policy = PatchPolicy(config: PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 1, rateDeadband: 0, settleSeconds: 0))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let offeredFirst = policy.offer(first, at: start, urgent: false)
        let firstPush = try #require(offeredFirst)
        #expect(firstPush.isFullContent)
        #expect(firstPush.patch == first.json)
        let offeredSecond = policy.offer(second, at: start + 1, urgent: false)
        let push = try #require(offeredSecond)
        #expect(!push.isFullContent)
        #expect(push.document == second)
        let diff = try #require(MergePatch.diff(from: first.json, to: second.json))
        #expect(push.contentPatch.encoded() == diff.encoded())
        #expect(push.patch == diff)
        #expect(MergePatch.apply(push.patch, to: first.json) == second.json)
    }
}

@Suite struct ProgressContentPatchTests {
    static func randomContent(_ random: inout SplitMix64) -> ProgressContent {
        let rows = [StatRow(label: "Charging", value: "800", unit: "W"), StatRow(label: "Full in", value: "1 h 20 min")]
        return ProgressContent(
            shared: SharedContent(
                label: ["Battery", nil].randomElement(using: &random)!, subtitle: [nil, "Grid: no reading since 14:02"].randomElement(using: &random)!,
                accentColor: [nil, "green", "gray"].randomElement(using: &random)!),
            value: [nil, 0, 0.5, 0.76].randomElement(using: &random)!, trend: [nil, .up, .down].randomElement(using: &random)!,
            statRows: [nil, [], Array(rows.prefix(1)), rows].randomElement(using: &random)!,
            startDate: [nil, "2026-06-01T10:00:00Z"].randomElement(using: &random)!, endDate: [nil, "2026-06-01T12:24:00Z"].randomElement(using: &random)!)
    }

    /// The model-level patch is exactly the JSON-level diff of the two documents.
    @Test func modelPatchEqualsTheDiffOfTheDocuments() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<5000 {
            let old = Self.randomContent(&random)
            let new = Bool.random(using: &random) ? old : Self.randomContent(&random)
            #expect(ProgressContent.mergePatch(from: old, to: new) == MergePatch.diff(from: old.json, to: new.json), "\(old.json) → \(new.json)")
            #expect(WidgetContent.mergePatch(from: .progress(old), to: .progress(new)) == MergePatch.diff(from: old.json, to: new.json))
        }
    }
}
