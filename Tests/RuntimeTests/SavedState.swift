import FlowCore
import Persistence

/// The state a restart would continue from: the newer whole one of the state's two copies. While
/// the daemon runs, and after a `kill -9`, that is not always the file at the state's path.
func savedState(_ path: String) -> JSONValue? {
    if case .state(let saved) = StateStore(path: path).inspect() { saved } else { nil }
}
