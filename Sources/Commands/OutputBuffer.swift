import Delivery
import FlowCore
import Platform

/// Buffered standard output: replay writes many short lines.
struct OutputBuffer {
    var bytes: [UInt8] = []
    /// The pushes' times, in the configured zone.
    var stamps: LocalTimeStamps

    init(zone: any LocalTimeZone) { stamps = LocalTimeStamps(zone: zone) }

    mutating func line(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        bytes.append(0x0A)
    }

    /// The engine's outputs: pushes as NDJSON lines (the stdout sink's bytes), diagnostics to the log.
    mutating func write(_ outputs: [FlowEngine.Output], log: Logger) {
        for output in outputs {
            switch output {
            case .push(let widget, let at, let push):
                PushLine.write(widget: widget, at: at, patch: push.contentPatch, stamps: &stamps, to: &bytes)
                bytes.append(0x0A)
                if bytes.count >= 65_536 { flush() }
            case .diagnostic(let diagnostic):
                log.log(diagnostic)
            case .accounts:
                break  // replay --final prints each widget's accounts once, at the end
            case .closedDay, .closedSlot, .refused, .sourceSilent, .sourceBack:
                break  // values for the day book and `check --listen`; the log has their lines
            }
        }
    }

    mutating func flush() {
        _ = FileDescriptor.writeAll(bytes, to: 1)
        bytes.removeAll(keepingCapacity: true)
    }
}
