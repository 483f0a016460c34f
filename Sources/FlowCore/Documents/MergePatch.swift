/// JSON merge patches (RFC 7396), the only way flowbridge updates a widget after its first document.
public enum MergePatch {
    /// Applies `patch` to `target` exactly as RFC 7396 §2 defines it: an object patch merges member
    /// by member (a `null` member removes the key), anything else replaces the target whole.
    public static func apply(_ patch: JSONValue, to target: JSONValue) -> JSONValue {
        guard case .object(let patchMembers) = patch else { return patch }
        var result = target.objectValue ?? [:]
        for (key, value) in patchMembers {
            if value == .null {
                result.removeValue(forKey: key)
            } else {
                result[key] = apply(value, to: result[key] ?? .null)
            }
        }
        return .object(result)
    }

    /// The smallest merge patch that turns `old` into `new`, or nil when they are equal.
    ///
    /// Objects recurse, so a change deep inside sends only the path to it; arrays and scalars are
    /// replaced whole (RFC 7396 has no array operations); a key that disappears becomes `null`.
    /// `apply(diff(a, b)!, to: a) == b` holds whenever `b` has no `null` member inside an object,
    /// which merge patches cannot express; widget documents never have one.
    public static func diff(from old: JSONValue, to new: JSONValue) -> JSONValue? {
        if old == new { return nil }
        guard case .object(let oldMembers) = old, case .object(let newMembers) = new else { return new }
        var patch: [String: JSONValue] = [:]
        for (key, oldValue) in oldMembers {
            if let newValue = newMembers[key] {
                if let change = diff(from: oldValue, to: newValue) { patch[key] = change }
            } else {
                patch[key] = .null
            }
        }
        for (key, newValue) in newMembers where oldMembers[key] == nil {
            patch[key] = newValue
        }
        return .object(patch)
    }
}

extension FlowContent {
    /// `MergePatch.diff(from: old.json, to: new.json)`, computed from the models: only the parts
    /// that differ are turned into JSON, which is what keeps a push cheap when one rate moved.
    public static func mergePatch(from old: FlowContent, to new: FlowContent) -> JSONValue? {
        var patch = JSONPatchBuilder()
        mergePatch(from: old, to: new, into: &patch)
        return patch.members.isEmpty ? nil : .object(patch.members)
    }

    /// The patch from `old` to `new`, member by member in key order, into `patch`: one account
    /// of what changed for the JSON value and for the text written straight from the models.
    static func mergePatch<Builder: MergePatchBuilder>(from old: FlowContent, to new: FlowContent, into patch: inout Builder) {
        // The shared fields and the unit (a reloaded config): their keys sort around "flow".
        var top: [(key: String, value: JSONValue)] = []
        if old.shared != new.shared || old.unit != new.unit {
            var oldTop = old
            var newTop = new
            (oldTop.inputs, oldTop.output, oldTop.storage, oldTop.exchange) = (nil, nil, nil, nil)
            (newTop.inputs, newTop.output, newTop.storage, newTop.exchange) = (nil, nil, nil, nil)
            if case .object(let members)? = MergePatch.diff(from: oldTop.json, to: newTop.json) {
                top = members.filter { $0.key != "flow" }.sorted { JSONValue.keyOrder($0.key, $1.key) }
            }
        }
        for member in top where JSONValue.keyOrder(member.key, "flow") { patch.set(MemberKey(member.key), member.value) }
        patch.object(.flow) { flow in
            func node(_ slot: FlowSlot, _ before: FlowNode?, _ after: FlowNode?) {
                switch (before, after) {
                case (let before?, let after?):
                    // Most nodes did not move: their key is not written to be taken back.
                    guard before != after else { return }
                    flow.object(slot.memberKey) { node in
                        for field in FlowNode.Field.allCases where field.differs(before, after) { node.set(field.memberKey, field.value(after) ?? .null) }
                    }
                case (_?, nil): flow.set(slot.memberKey, .null)
                case (nil, let after?): flow.set(slot.memberKey, node: after)
                case (nil, nil): break
                }
            }
            // In key order: exchange, inputs, output, storage.
            node(.exchange, old.exchange, new.exchange)
            if old.inputs != new.inputs {
                if let inputs = new.inputs { flow.set(.inputs, nodes: inputs) } else { flow.set(.inputs, .null) }
            }
            node(.output, old.output, new.output)
            node(.storage, old.storage, new.storage)
        }
        for member in top where JSONValue.keyOrder("flow", member.key) { patch.set(MemberKey(member.key), member.value) }
    }
}

/// A member's key as a patch has it: its name, and its JSON text with the colon after it
/// (`"rate":`), written once. A patch writes some five keys, and writing each from its name
/// again cost more than the rest of the patch.
struct MemberKey {
    let name: String
    let text: [UInt8]

    init(_ name: String) {
        self.name = name
        var text: [UInt8] = []
        JSONValue.writeString(name, to: &text)
        text.append(UInt8(ascii: ":"))
        self.text = text
    }

    static let flow = MemberKey("flow")
    static let inputs = MemberKey(FlowSlot.inputs.rawValue)
    static let output = MemberKey(FlowSlot.output.rawValue)
    static let storage = MemberKey(FlowSlot.storage.rawValue)
    static let exchange = MemberKey(FlowSlot.exchange.rawValue)
    /// A node's fields' keys, in the order of `FlowNode.Field`'s cases.
    static let fields = FlowNode.Field.allCases.map { MemberKey($0.key) }
}

extension FlowSlot {
    var memberKey: MemberKey {
        switch self {
        case .inputs: .inputs
        case .output: .output
        case .storage: .storage
        case .exchange: .exchange
        }
    }
}

extension FlowNode.Field {
    var memberKey: MemberKey { MemberKey.fields[rawValue] }
}

/// Where a merge patch goes as it is worked out: into a JSON value (`JSONPatchBuilder`), or
/// straight into the bytes of its JSON text (`JSONPatchWriter`). Members come in the order of
/// their keys' UTF-8 bytes, the order in which JSON text is written.
protocol MergePatchBuilder {
    mutating func set(_ key: MemberKey, _ value: JSONValue)
    /// A whole node, or the inputs' array of them (a merge patch replaces an array whole): the
    /// value of `node.json`. The inputs change at most readings, and a writer writes them without
    /// making the dictionaries of their JSON.
    mutating func set(_ key: MemberKey, node: FlowNode)
    mutating func set(_ key: MemberKey, nodes: [FlowNode])
    /// A nested object, left out when `body` sets nothing in it.
    mutating func object(_ key: MemberKey, _ body: (inout Self) -> Void)
}

/// Builds the patch as a JSON value.
struct JSONPatchBuilder: MergePatchBuilder {
    var members: [String: JSONValue] = [:]

    mutating func set(_ key: MemberKey, _ value: JSONValue) { members[key.name] = value }
    mutating func set(_ key: MemberKey, node: FlowNode) { members[key.name] = node.json }
    mutating func set(_ key: MemberKey, nodes: [FlowNode]) { members[key.name] = .array(nodes.map(\.json)) }

    mutating func object(_ key: MemberKey, _ body: (inout Self) -> Void) {
        var nested = JSONPatchBuilder()
        body(&nested)
        if !nested.members.isEmpty { members[key.name] = .object(nested.members) }
    }
}

/// Writes the patch's members as JSON text, the same bytes as `JSONValue.write` of the patch.
struct JSONPatchWriter: MergePatchBuilder {
    var out: [UInt8]
    /// Members written so far in the object being written.
    var count = 0

    mutating func set(_ key: MemberKey, _ value: JSONValue) {
        writeKey(key)
        value.write(to: &out)
        count += 1
    }

    mutating func set(_ key: MemberKey, node: FlowNode) {
        writeKey(key)
        write(node)
        count += 1
    }

    mutating func set(_ key: MemberKey, nodes: [FlowNode]) {
        writeKey(key)
        out.append(UInt8(ascii: "["))
        for index in nodes.indices {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            write(nodes[index])
        }
        out.append(UInt8(ascii: "]"))
        count += 1
    }

    /// `node.json`'s text: its fields in key order, an absent one left out.
    private mutating func write(_ node: FlowNode) {
        out.append(UInt8(ascii: "{"))
        var written = 0
        for field in FlowNode.Field.allCases {
            guard let value = field.value(node) else { continue }
            if written > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: field.memberKey.text)
            value.write(to: &out)
            written += 1
        }
        out.append(UInt8(ascii: "}"))
    }

    mutating func object(_ key: MemberKey, _ body: (inout Self) -> Void) {
        let start = out.count
        let outer = count
        writeKey(key)
        out.append(UInt8(ascii: "{"))
        count = 0
        body(&self)
        if count == 0 {
            out.removeSubrange(start...)  // nothing in it: the key goes too
            count = outer
        } else {
            out.append(UInt8(ascii: "}"))
            count = outer + 1
        }
    }

    private mutating func writeKey(_ key: MemberKey) {
        if count > 0 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: key.text)
    }
}

/// The merge patch of one push. A flow's patch is written as text when it is made, straight from
/// the two documents (without the dictionaries of a JSON value: building the patch and then
/// writing it cost more than the rest of a reading's way through the engine), and made into JSON
/// only when it is read; most pushes are only written out (standard output, replay, MQTT).
public struct ContentPatch: Sendable, Equatable {
    private enum Form: Sendable {
        case json(JSONValue)
        /// A flow's patch: its text, and the documents it goes between.
        case written([UInt8], WidgetContent, WidgetContent)
        /// Any other patch: the documents it goes between, diffed when it is read.
        case between(WidgetContent, WidgetContent)
    }

    private let form: Form

    private init(form: Form) { self.form = form }

    /// A patch that is already JSON (a whole document, a diff made elsewhere).
    public init(_ json: JSONValue) { form = .json(json) }

    /// The patch from `old` to `new`.
    public init(from old: WidgetContent, to new: WidgetContent) {
        if case .flow(let oldFlow) = old, case .flow(let newFlow) = new {
            self.init(from: oldFlow, to: newFlow, documents: (old, new))
        } else {
            self.init(form: .between(old, new))
        }
    }

    /// The patch from the flow `old` to the flow `new`, whose documents are `documents`: the
    /// flows are passed unboxed, where the caller has them, for a flow copied out of its document
    /// retains each of its texts.
    init(from old: FlowContent, to new: FlowContent, documents: (old: WidgetContent, new: WidgetContent)) {
        var writer = JSONPatchWriter(out: [])
        writer.out.reserveCapacity(96)
        writer.out.append(UInt8(ascii: "{"))
        FlowContent.mergePatch(from: old, to: new, into: &writer)
        writer.out.append(UInt8(ascii: "}"))
        self.init(form: .written(writer.out, documents.old, documents.new))
    }

    /// The patch as a JSON value; `{}` when the documents do not differ.
    public var json: JSONValue {
        switch form {
        case .json(let json): json
        case .written(_, let old, let new), .between(let old, let new): WidgetContent.mergePatch(from: old, to: new) ?? .object([:])
        }
    }

    /// Appends the patch's JSON text: the bytes `json.write(to:)` would append.
    public func write(to out: inout [UInt8]) {
        if case .written(let text, _, _) = form { out.append(contentsOf: text) } else { json.write(to: &out) }
    }

    /// The patch's JSON text.
    public func encoded() -> [UInt8] {
        if case .written(let text, _, _) = form { return text }
        return json.encoded()
    }

    public static func == (lhs: ContentPatch, rhs: ContentPatch) -> Bool { lhs.json == rhs.json }
}

extension ProgressContent {
    /// `MergePatch.diff(from: old.json, to: new.json)`, field by field: only what changed becomes JSON.
    public static func mergePatch(from old: ProgressContent, to new: ProgressContent) -> JSONValue? {
        if old == new { return nil }
        var patch: [String: JSONValue] = [:]
        for (key, field) in SharedContent.keys where old.shared[keyPath: field] != new.shared[keyPath: field] {
            patch[key] = new.shared[keyPath: field].map(JSONValue.string) ?? .null
        }
        for (key, value) in fields {
            let after = value(new)
            if after != value(old) { patch[key] = after ?? .null }
        }
        return .object(patch)
    }
}

extension WidgetContent {
    /// `MergePatch.diff(from: old.json, to: new.json)`, computed from the models: only the parts that
    /// differ are turned into JSON, which keeps a push cheap. (A widget whose template changed, in a
    /// reloaded config, is diffed as JSON.)
    public static func mergePatch(from old: WidgetContent, to new: WidgetContent) -> JSONValue? {
        if case .flow(let old) = old, case .flow(let new) = new { return FlowContent.mergePatch(from: old, to: new) }
        if case .progress(let old) = old, case .progress(let new) = new { return ProgressContent.mergePatch(from: old, to: new) }
        return MergePatch.diff(from: old.json, to: new.json)
    }
}
