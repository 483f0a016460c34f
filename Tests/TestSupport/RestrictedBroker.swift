import Foundation

extension MosquittoBroker {
    /// A broker whose anonymous clients may subscribe only to filters under `reading` (each a
    /// pattern such as `meters/#`) and publish nothing: SUBACK 0x80 (0x87 under MQTT 5) for any
    /// other filter, an MQTT 5 PUBACK "not authorized" for every publish. mosquitto 2.0's
    /// `acl_file` never refuses a subscription (it only filters what is delivered), so this uses
    /// its dynamic-security plugin, which does.
    public static func restricted(reading: [String]) async throws -> MosquittoBroker {
        let plugin = "/usr/lib/\(Self.multiarch)/mosquitto_dynamic_security.so"
        guard FileManager.default.fileExists(atPath: plugin) else { throw BrokerError("no \(plugin)") }
        let acls = reading.map { ["acltype": "subscribePattern", "topic": $0, "allow": true] as [String: Any] }
        let config: [String: Any] = [
            "defaultACLAccess": ["publishClientSend": false, "publishClientReceive": true, "subscribe": false, "unsubscribe": true],
            "clients": [] as [Any],
            "groups": [["groupname": "anonymous", "roles": [["rolename": "reader"]]]],
            "roles": [["rolename": "reader", "acls": acls]],
            "anonymousGroup": "anonymous",
        ]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("flowbridge-dynsec-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: config).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }  // read once, at the start
        return try await MosquittoBroker(extraConfig: ["plugin \(plugin)", "plugin_opt_config_file \(file.path)"])
    }

    private static var multiarch: String {
        #if arch(arm64)
        "aarch64-linux-gnu"
        #else
        "x86_64-linux-gnu"
        #endif
    }
}
