import Delivery
import FlowCore

/// Where `check` says the pushes go: the widget API of each widget (its URL without secrets), and
/// `output:`; a config without any sink gets a warning.
extension ConfigSummary {
    func pushLines(widget: String) -> [String] {
        guard let push = config.pushes.first(where: { $0.widget == widget }) else { return [] }
        let api = push.api
        let token: String
        if let file = push.tokenFile {
            token = file.hasPrefix("/") ? "token from \(file)" : "token from the credential \(file) ($CREDENTIALS_DIRECTORY)"
        } else {
            token = "token from $\(push.tokenEnv ?? "")"
        }
        let transport: String
        if !api.url.hasPrefix("https://") {
            transport = "plain HTTP: the token travels unencrypted"
        } else if api.insecure {
            transport = "TLS without certificate verification (insecure)"
        } else {
            transport = "TLS verified against \(api.caFile ?? "the system's certificates")"
        }
        let body = api.bodyKey.isEmpty ? "the document itself" : "{\"\(api.bodyKey)\": …}"
        return [
            "  push to \(api.displayURL)",
            "      \(api.replaceMethod) the whole document first and after any doubt, then \(api.patchMethod) merge patches; body \(body)",
            "      \(token); \(transport)",
            "      timeouts \(JSONValue.format(api.connectTimeoutSeconds))s to connect, \(JSONValue.format(api.timeoutSeconds))s in all; retries \(JSONValue.format(api.retry.minSeconds))s … \(JSONValue.format(api.retry.maxSeconds))s apart"
                + (api.headers.isEmpty ? "" : "; headers \(api.headers.map(\.name).joined(separator: ", "))"),
        ]
    }

    var outputLines: [String] {
        if !config.hasSink {
            return ["", "warning: no sink: pushes are computed but go nowhere (add push: to a widget, or output: {stdout: true}; run --dry-run prints them)"]
        }
        return config.output.stdout ? ["", "output: standard output (NDJSON)"] : []
    }
}
