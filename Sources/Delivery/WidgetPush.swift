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
    /// `isFullContent`), made into JSON when it is read.
    public var contentPatch: ContentPatch
    /// The whole document after this push.
    public var document: WidgetContent
    /// What of `document` the engine marks held (what `run --summary` says "(held)" of).
    public var held: HeldMark
    public var isFullContent: Bool

    /// The merge patch as JSON.
    public var patch: JSONValue { contentPatch.json }

    public init(
        widget: String, at: Date, sequence: UInt64, patch: ContentPatch, document: WidgetContent, held: HeldMark, isFullContent: Bool
    ) {
        self.widget = widget
        self.at = at
        self.sequence = sequence
        contentPatch = patch
        self.document = document
        self.held = held
        self.isFullContent = isFullContent
    }

    public init(
        widget: String, at: Date, sequence: UInt64, patch: JSONValue, document: WidgetContent, held: HeldMark, isFullContent: Bool
    ) {
        self.init(
            widget: widget, at: at, sequence: sequence, patch: ContentPatch(patch), document: document, held: held,
            isFullContent: isFullContent)
    }
}

/// A push as a sink sends it: the patch from what *this sink* last took, which is the engine's own
/// patch while the sink keeps up, and a diff it computed itself after it fell behind.
public struct OutgoingPush: Sendable {
    public var widget: String
    public var at: Date
    /// Made into JSON when it is read; a writer takes its text with `contentPatch.write(to:)`.
    public var contentPatch: ContentPatch
    public var document: WidgetContent
    /// What of `document` the engine marks held.
    public var held: HeldMark
    /// The patch is the whole content (nothing was taken before, or the engine started over).
    public var isFullContent: Bool

    /// The merge patch as JSON.
    public var patch: JSONValue { contentPatch.json }
}
