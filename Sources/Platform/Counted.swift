/// `1 source`, `3 sources`: a count and its noun, for the lines people read.
public func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
