/// A command line that is wrong: what is wrong, said to the person who typed it, with the usage
/// of the command they meant (or of all of them, when the command itself is unknown). Exit 64.
struct UsageError: Error, Equatable {
    var message: String
    /// The overview of every command goes with it, not one command's usage.
    var showsOverview = false

    init(_ message: String, showsOverview: Bool = false) {
        self.message = message
        self.showsOverview = showsOverview
    }
}
