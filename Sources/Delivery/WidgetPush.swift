import FlowCore
import FoundationEssentials

/// One push of a widget as the engine made it: what every sink is handed.
public struct WidgetPush: Sendable {
    public var widget: String
    public var at: Date
    /// Counts the widget's pushes since the daemon started: `patch` applies to the document of the
    /// push numbered one less, which is how a sink that skipped pushes knows it must diff itself.
    public var sequence: UInt64
    /// The RFC 7396 merge patch from the previous push's document (the whole content when
    /// `isFullContent`).
    public var patch: JSONValue
    /// The whole document after this push.
    public var document: WidgetContent
    public var isFullContent: Bool

    public init(widget: String, at: Date, sequence: UInt64, patch: JSONValue, document: WidgetContent, isFullContent: Bool) {
        self.widget = widget
        self.at = at
        self.sequence = sequence
        self.patch = patch
        self.document = document
        self.isFullContent = isFullContent
    }
}

/// A push as a sink sends it: the patch from what *this sink* last took, which is the engine's own
/// patch while the sink keeps up, and a diff it computed itself after it fell behind.
public struct OutgoingPush: Sendable {
    public var widget: String
    public var at: Date
    public var patch: JSONValue
    public var document: WidgetContent
    /// The patch is the whole content (nothing was taken before, or the engine started over).
    public var isFullContent: Bool
}
