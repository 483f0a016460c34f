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
        var patch: [String: JSONValue] = [:]
        if old.shared != new.shared || old.unit != new.unit {
            var oldTop = old
            var newTop = new
            (oldTop.inputs, oldTop.output, oldTop.storage, oldTop.exchange) = (nil, nil, nil, nil)
            (newTop.inputs, newTop.output, newTop.storage, newTop.exchange) = (nil, nil, nil, nil)
            if case .object(let members)? = MergePatch.diff(from: oldTop.json, to: newTop.json) {
                patch = members.filter { $0.key != "flow" }
            }
        }
        var flow = [String: JSONValue](minimumCapacity: 4)  // sized once for the four slots
        if old.inputs != new.inputs {
            flow[FlowSlot.inputs.rawValue] = new.inputs.map { .array($0.map(\.json)) } ?? .null
        }
        func node(_ slot: FlowSlot, _ before: FlowNode?, _ after: FlowNode?) {
            let change: JSONValue? = switch (before, after) {
            case (let before?, let after?): FlowNode.mergePatch(from: before, to: after)
            case (_?, nil): .null
            case (nil, let after?): after.json
            case (nil, nil): nil
            }
            if let change { flow[slot.rawValue] = change }
        }
        node(.output, old.output, new.output)
        node(.storage, old.storage, new.storage)
        node(.exchange, old.exchange, new.exchange)
        if !flow.isEmpty { patch["flow"] = .object(flow) }
        return patch.isEmpty ? nil : .object(patch)
    }
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
