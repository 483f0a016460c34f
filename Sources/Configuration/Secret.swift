/// A password or token: compared like any setting, never printed (`description` and `dump` redact it).
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
