import Window

extension ConfigLoader {
    /// `http:`: the window. `listen` (HOST:PORT, numeric), the credential for clients other than
    /// this machine (`token_file`, a systemd credential when relative, or `token_env`), `ingress`
    /// (the Home Assistant add-on), `refresh` (the page's reload), `idle_timeout`,
    /// `request_timeout` and `max_connections`. Listening beyond loopback without a credential is refused: nobody but
    /// this machine could look, which is what loopback says plainly.
    func loadWindow(_ node: ConfigNode) -> WindowSettings? {
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        let listenText = map.required("listen")?.text()
        let tokenFile = map.text("token_file")
        let tokenEnv = map.text("token_env")
        if tokenFile != nil, let tokenEnv { tokenEnv.report("write token_file or token_env, not both") }
        let ingress = map.flag("ingress")
        let refresh = map.duration("refresh")
        let idleTimeout = map.duration("idle_timeout")
        let requestTimeout = map.duration("request_timeout")
        let maxConnections = map.number("max_connections")
        guard let listenText else { return nil }
        let listen: ListenAddress
        switch ListenAddress.parse(listenText.value) {
        case .success(let address): listen = address
        case .failure(let problem):
            listenText.report(problem.description)
            return nil
        }
        var settings = WindowSettings(listen: listen)
        settings.ingress = ingress?.value ?? false
        /// A duration of 1 s to 1 h, in whole seconds; reported otherwise.
        func withinAnHour(_ duration: ConfigValue<Double>?) -> UInt32? {
            guard let duration else { return nil }
            guard duration.value >= 1, duration.value <= 3600 else {
                duration.report("must be between 1s and 1h")
                return nil
            }
            return UInt32(duration.value)
        }
        if let seconds = withinAnHour(refresh) { settings.refreshSeconds = Int(seconds) }
        if let seconds = withinAnHour(idleTimeout) { settings.limits.idleTimeoutSeconds = seconds }
        if let seconds = withinAnHour(requestTimeout) { settings.limits.requestTimeoutSeconds = seconds }
        if let maxConnections {
            if maxConnections.value < 1 || maxConnections.value > 1024 || maxConnections.value != maxConnections.value.rounded() {
                maxConnections.report("must be a whole number from 1 to 1024")
            } else {
                settings.limits.connections = UInt32(maxConnections.value)
                settings.limits.perAddress = min(settings.limits.perAddress, settings.limits.connections)
            }
        }
        if let context, let secret = loadSecret(file: tokenFile, variable: tokenEnv, context: context) {
            settings.credential = WindowCredential(secret.value)
        }
        if !listen.isLoopbackOnly, !settings.ingress, tokenFile == nil, tokenEnv == nil {
            listenText.report("listens beyond this machine without credentials: add token_file (or token_env), or listen on 127.0.0.1")
        }
        return settings
    }
}
