import Glibc

/// The secrets of a config (the broker password, each widget's API token) are never written into
/// it: they come from a file or an environment variable. One lookup serves them all.
enum Credential {
    /// Reads the secret from `file` or, without one, from the environment variable `variable`;
    /// nil when neither is set.
    ///
    /// A relative `file` is a systemd credential: it is looked up in `$CREDENTIALS_DIRECTORY`
    /// (where `LoadCredential=` puts it), or the working directory outside systemd. Trailing line
    /// breaks are dropped (an editor's last newline is not part of a password). Errors name the
    /// config key (`key` is `mqtt.password` or `widgets.power.push.token`, read as `<key>_file` and
    /// `<key>_env`) and never the secret.
    static func read(file: String?, variable: String?, key: String, configFile: String) throws(ConfigError) -> String? {
        if let file {
            let directory = file.hasPrefix("/") ? nil : getenv("CREDENTIALS_DIRECTORY").map { String(cString: $0) }
            let path = directory.map { "\($0)/\(file)" } ?? file
            let bytes: [UInt8]
            do { bytes = try FileIO.read(path) } catch {
                throw ConfigError(file: configFile, problems: [ConfigProblem(path: "\(key)_file", line: nil, message: "cannot read \(error)")])
            }
            var text = String(decoding: bytes, as: UTF8.self)
            while text.last?.isNewline == true { text.removeLast() }
            return text
        }
        if let variable {
            guard let value = getenv(variable) else {
                throw ConfigError(file: configFile, problems: [
                    ConfigProblem(path: "\(key)_env", line: nil, message: "the environment variable \(variable) is not set")
                ])
            }
            return String(cString: value)
        }
        return nil
    }
}
