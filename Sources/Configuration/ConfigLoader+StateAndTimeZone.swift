import Persistence
import Platform

extension ConfigLoader {
    /// `timezone:`: an IANA zone name the system's zone database has.
    func loadTimeZone(_ timezone: ConfigValue<String>?) -> String? {
        if let timezone, SystemTimeZone(identifier: timezone.value) == nil {
            timezone.report("unknown time zone '\(timezone.value)' (an IANA name such as Europe/Berlin)")
        }
        return timezone?.value
    }

    /// `state_file:`; with a context, the state file a run would use (this one, `--state` or the
    /// default place) is checked too.
    func loadStateFile(_ stateFile: ConfigValue<String>?) -> String? {
        if let context { checkStateFile(stateFile, context: context) }
        return stateFile?.value
    }

    /// The state file a run would use must be a flowbridge state or nothing yet: a directory, the
    /// config itself or another program's file is refused here, before anything is renamed.
    private func checkStateFile(_ configured: ConfigValue<String>?, context: ConfigContext) {
        let path = context.statePath(configured: configured?.value)
        guard case .unusable(let problem) = StateStore(path: path).inspect(configPath: file) else { return }
        if context.stateOverride != nil {
            reader.report("", nil, "--state: \(problem)")
        } else if let configured {
            configured.report("\(problem.path) \(problem.reason)")
        } else {
            reader.report("", nil, "\(problem) (the default place; set state_file or --state to use another)")
        }
    }
}
