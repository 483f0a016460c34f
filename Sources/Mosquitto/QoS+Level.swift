import FlowCore

extension QoS {
    /// The number libmosquitto takes.
    var level: Int32 { Int32(rawValue) }
}
