import FoundationEssentials

/// What of a widget's document shows held readings of silent meters (`when_stale: hold`, while
/// the widget's `stale_marker` is on): the flow's nodes by place, or the progress bar.
///
/// The widget is told only by a color: the engine sends a held node or bar gray, which is all the
/// template has for it. Everything else that says "held" (the summary, the pictures, the day
/// charts) reads this mark, made where the engine decides, so that a node the user colors gray is
/// not taken for a held one.
public struct HeldMark: Sendable, Equatable {
    /// The flow's nodes that show a held reading, by their place in the document (an input by its
    /// index among the document's inputs, which leave out the ones cleared).
    public var nodes: Set<NodePlace>
    /// Whether the progress bar shows a held reading.
    public var bar: Bool

    public init(nodes: Set<NodePlace> = [], bar: Bool = false) {
        self.nodes = nodes
        self.bar = bar
    }

    /// Nothing is held.
    public static let none = HeldMark()
}

/// A widget's document as the engine made it, with what of it is held.
public struct ShownDocument: Sendable, Equatable {
    public var content: WidgetContent
    public var held: HeldMark

    public init(content: WidgetContent, held: HeldMark) {
        self.content = content
        self.held = held
    }
}
