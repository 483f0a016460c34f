/// The methods the widget API is reached with (`methods: {replace:, patch:}` of a widget's
/// `push:`): the contract replaces the whole document with PUT and sends merge patches with
/// PATCH; some deployments take the document by POST.
public enum HTTPMethod: String, Sendable, CaseIterable, CustomStringConvertible {
    case put = "PUT"
    case patch = "PATCH"
    case post = "POST"

    /// The method as it goes on the wire and into log lines: `PUT`.
    public var description: String { rawValue }
}
