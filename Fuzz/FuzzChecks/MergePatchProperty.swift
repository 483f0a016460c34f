import FlowCore

/// RFC 7396 merge patches on documents drawn from the input (`FuzzInput`), and the model-level
/// patches the engine sends.
///
/// Holds: `apply(diff(a, b), a) == b` for any `b` without a `null` member in an object (a patch
/// cannot say "set to null"), and `diff(a, a)` is nothing; applying an object patch twice is
/// applying it once; `FlowContent.mergePatch`, `ProgressContent.mergePatch` and
/// `WidgetContent.mergePatch` equal `MergePatch.diff` of the documents' JSON; and a content
/// document reads back as the model that wrote it.
public enum MergePatchProperty: FuzzProperty {
    public static let name = "MergePatch"

    public static func check(_ input: [UInt8]) -> [String] {
        var draw = FuzzInput(input)
        var findings: [String] = []

        let old = document(&draw, depth: 4)
        let new = withoutObjectNulls(mutated(old, &draw, depth: 3))
        if let patch = MergePatch.diff(from: old, to: new) {
            let result = MergePatch.apply(patch, to: old)
            if result != new { findings.append("diff \(patch) of \(old) → \(new) applies to \(result)") }
        } else if old != new {
            findings.append("no diff between the different \(old) and \(new)")
        }
        if let patch = MergePatch.diff(from: old, to: old) { findings.append("\(old) differs from itself by \(patch)") }

        let patch = JSONValue.object(members(&draw, depth: 3))
        let target = document(&draw, depth: 3)
        let once = MergePatch.apply(patch, to: target)
        let twice = MergePatch.apply(patch, to: once)
        if once != twice { findings.append("\(patch) applied to \(target) gives \(once), and again \(twice)") }

        let flow = flowContent(&draw)
        let nextFlow = mutated(flow, &draw)
        compare(FlowContent.mergePatch(from: flow, to: nextFlow), flow.json, nextFlow.json, "flow", &findings)
        let progress = progressContent(&draw)
        let nextProgress = mutated(progress, &draw)
        compare(ProgressContent.mergePatch(from: progress, to: nextProgress), progress.json, nextProgress.json, "progress", &findings)
        let contents: [WidgetContent] = [.flow(flow), .flow(nextFlow), .progress(progress), .progress(nextProgress)]
        let (before, after) = (draw.pick(contents), draw.pick(contents))
        compare(WidgetContent.mergePatch(from: before, to: after), before.json, after.json, "widget", &findings)
        for content in contents {
            do {
                let read = try WidgetContent(json: content.json)
                if read != content { findings.append("\(content.json) reads back as \(read.json)") }
            } catch {
                findings.append("\(content.json) does not read back: \(error)")
            }
        }
        return findings
    }

    static func compare(_ modelPatch: JSONValue?, _ old: JSONValue, _ new: JSONValue, _ what: String, _ findings: inout [String]) {
        let expected = MergePatch.diff(from: old, to: new)
        if modelPatch != expected {
            findings.append("\(what) patch from the models \(modelPatch?.description ?? "nil") differs from the JSON diff \(expected?.description ?? "nil") of \(old) → \(new)")
        }
    }

    // MARK: JSON documents

    static let keys = ["a", "b", "rate", "flow", "", "é", "a.b"]
    static let words = ["", "x", "Solar", "null", "W", "2026-06-21T10:00:00Z"]

    static func document(_ draw: inout FuzzInput, depth: Int) -> JSONValue {
        switch draw.below(depth > 0 ? 7 : 4) {
        case 0: return .null
        case 1: return .bool(draw.bool())
        case 2: return .number(draw.finiteDouble())
        case 3: return .string(draw.text(words))
        case 4: return .array((0..<draw.below(4)).map { _ in document(&draw, depth: depth - 1) })
        default: return .object(members(&draw, depth: depth - 1))
        }
    }

    static func members(_ draw: inout FuzzInput, depth: Int) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for _ in 0..<draw.below(5) { members[draw.text(keys)] = document(&draw, depth: depth) }
        return members
    }

    /// `value` with a few changes: kept, replaced, or (an object) members kept, removed, changed, added.
    static func mutated(_ value: JSONValue, _ draw: inout FuzzInput, depth: Int) -> JSONValue {
        switch draw.below(4) {
        case 0: return value
        case 1: return document(&draw, depth: depth)
        default:
            guard case .object(var members) = value else { return document(&draw, depth: depth) }
            // Sorted: the same input draws the same way in every process (hashing is seeded per process).
            for key in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                switch draw.below(3) {
                case 0: break
                case 1: members[key] = nil
                default: members[key] = mutated(members[key]!, &draw, depth: depth - 1)
                }
            }
            if draw.bool() { members[draw.text(keys)] = document(&draw, depth: depth - 1) }
            return .object(members)
        }
    }

    /// The document without `null` members in the objects a merge patch reaches (an array is
    /// replaced whole, nulls and all).
    static func withoutObjectNulls(_ value: JSONValue) -> JSONValue {
        guard case .object(let members) = value else { return value }
        return .object(members.filter { $0.value != .null }.mapValues(withoutObjectNulls))
    }

    // MARK: Content models

    static let texts = ["Solar", "Grid", "Home", "Battery", "sun.max.fill", "#FF9500", "yellow", ""]
    // Computed: key paths are not Sendable, so they cannot be shared as stored statics.
    static var sharedFields: [WritableKeyPath<SharedContent, String?>] {
        [\.label, \.subtitle, \.icon, \.accentColor, \.backgroundColor, \.textColor]
    }
    static var nodeTexts: [WritableKeyPath<FlowNode, String?>] { [\.name, \.icon, \.color] }
    static var nodeNumbers: [WritableKeyPath<FlowNode, Double?>] { [\.rate, \.total, \.level] }
    static var slots: [WritableKeyPath<FlowContent, FlowNode?>] { [\.output, \.storage, \.exchange] }

    static func optionalText(_ draw: inout FuzzInput, _ words: [String] = texts) -> String? {
        draw.bool() ? draw.text(words) : nil
    }

    static func optionalNumber(_ draw: inout FuzzInput) -> Double? { draw.bool() ? draw.finiteDouble() : nil }

    static func shared(_ draw: inout FuzzInput) -> SharedContent {
        var shared = SharedContent()
        for field in sharedFields { shared[keyPath: field] = optionalText(&draw) }
        return shared
    }

    static func node(_ draw: inout FuzzInput) -> FlowNode {
        var node = FlowNode(rate: nil)
        for field in nodeTexts { node[keyPath: field] = optionalText(&draw) }
        for field in nodeNumbers { node[keyPath: field] = optionalNumber(&draw) }
        return node
    }

    static func flowContent(_ draw: inout FuzzInput) -> FlowContent {
        var flow = FlowContent(shared: shared(&draw), unit: optionalText(&draw, ["W", "kW"]))
        if draw.bool() { flow.inputs = (0..<draw.below(5)).map { _ in node(&draw) } }
        for slot in slots where draw.bool() { flow[keyPath: slot] = node(&draw) }
        return flow
    }

    static func mutated(_ node: FlowNode, _ draw: inout FuzzInput) -> FlowNode {
        var node = node
        switch draw.below(3) {
        case 0: node[keyPath: draw.pick(nodeTexts)] = optionalText(&draw)
        case 1: node[keyPath: draw.pick(nodeNumbers)] = optionalNumber(&draw)
        default: node = self.node(&draw)
        }
        return node
    }

    /// A few edits: a shared field, the unit, the inputs, a slot or a field of one.
    static func mutated(_ flow: FlowContent, _ draw: inout FuzzInput) -> FlowContent {
        var flow = flow
        for _ in 0..<draw.below(5) {
            switch draw.below(6) {
            case 0: flow.shared[keyPath: draw.pick(sharedFields)] = optionalText(&draw)
            case 1: flow.unit = optionalText(&draw, ["W", "kW"])
            case 2:
                if var inputs = flow.inputs, !inputs.isEmpty, draw.bool() {
                    let index = draw.below(inputs.count)
                    inputs[index] = mutated(inputs[index], &draw)
                    flow.inputs = inputs
                } else {
                    flow.inputs = draw.bool() ? (0..<draw.below(5)).map { _ in node(&draw) } : nil
                }
            case 3: flow[keyPath: draw.pick(slots)] = draw.bool() ? node(&draw) : nil
            default:
                let slot = draw.pick(slots)
                flow[keyPath: slot] = flow[keyPath: slot].map { mutated($0, &draw) } ?? node(&draw)
            }
        }
        return flow
    }

    static func statRows(_ draw: inout FuzzInput) -> [StatRow]? {
        guard draw.bool() else { return nil }
        return (0..<draw.below(8)).map { _ in
            StatRow(label: draw.text(texts), value: draw.text(["800", "3.2", "1 h 20 min"]), unit: optionalText(&draw, ["W", "kWh"]))
        }
    }

    static func progressContent(_ draw: inout FuzzInput) -> ProgressContent {
        ProgressContent(
            shared: shared(&draw), value: optionalNumber(&draw), trend: optionalText(&draw, ["up", "down", "flat", "sideways"]).flatMap(ProgressContent.Trend.init),
            statRows: statRows(&draw), startDate: optionalText(&draw, words), endDate: optionalText(&draw, words))
    }

    static func mutated(_ progress: ProgressContent, _ draw: inout FuzzInput) -> ProgressContent {
        var progress = progress
        for _ in 0..<draw.below(5) {
            switch draw.below(6) {
            case 0: progress.shared[keyPath: draw.pick(sharedFields)] = optionalText(&draw)
            case 1: progress.value = optionalNumber(&draw)
            case 2: progress.trend = optionalText(&draw, ["up", "down", "flat"]).flatMap(ProgressContent.Trend.init)
            case 3: progress.statRows = statRows(&draw)
            case 4: progress.startDate = optionalText(&draw, words)
            default: progress.endDate = optionalText(&draw, words)
            }
        }
        return progress
    }
}
