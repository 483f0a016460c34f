/// How a flowbridge command ends. Every command returns one of these, and `main.swift` exits with
/// its raw value: 0, a command's own finding (1, 2), or a sysexits(3) status, so a supervisor or a
/// script can tell a wrong command line from a broken config from a broker it cannot reach.
public enum ExitStatus: Int32, Sendable, Equatable {
    case success = 0
    /// What a command looked for is not there: `check --listen` heard nothing from a source (or
    /// never reached the broker), `discover` recognized no device. Also `run` stopped at once by a
    /// second stop signal.
    case failure = 1
    /// `check --listen`: every source reported, and a sign looks wrong.
    case wrongSign = 2
    /// EX_USAGE: the command line is wrong.
    case usage = 64
    /// EX_DATAERR: the input is not data to use.
    case dataError = 65
    /// EX_NOINPUT: an input file is not there.
    case noInput = 66
    /// EX_UNAVAILABLE: the broker cannot be reached.
    case unavailable = 69
    /// EX_CANTCREAT: a file (the state, a picture, a config) cannot be made or written.
    case cannotCreate = 73
    /// EX_IOERR: a write failed.
    case ioError = 74
    /// EX_TEMPFAIL: the state is in use by another daemon; it may be free later.
    case stateInUse = 75
    /// EX_CONFIG: the config is broken.
    case config = 78
}
