import Window

extension ConfigLoader {
    /// `http:`: the window. `listen` (HOST:PORT, numeric), the credential for clients other than
    /// this machine (`token_file`, a systemd credential when relative, or `token_env`), `ingress`
    /// (the Home Assistant add-on), `refresh` (the page's reload), `idle_timeout` and
    /// `max_connections`. Listening beyond loopback without a credential is refused: nobody but
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
        if let refresh {
            if refresh.value < 1 || refresh.value > 3600 { refresh.report("must be between 1s and 1h") } else { settings.refreshSeconds = Int(refresh.value) }
        }
        if let idleTimeout {
            if idleTimeout.value < 1 || idleTimeout.value > 3600 {
                idleTimeout.report("must be between 1s and 1h")
            } else {
                settings.limits.idleTimeoutSeconds = UInt32(idleTimeout.value)
            }
        }
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
