import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import Rendering
import TestSupport
import Testing

/// `make run`'s script (`scripts/demo.sh`) as a newcomer runs it: a private mosquitto, the
/// simulated home at 720x and the daemon printing every push with a line in words; stopped by
/// `--duration`, by Ctrl-C, and pushing to a real widget service when DEMO_URL and DEMO_TOKEN say so.
/// One demo at a time: each is a broker, a simulator and a daemon for half a minute, and the
/// machine is shared with the rest of the suite.
@Suite(.serialized, .enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct DemoTests {
    static let script = Repository.root.appendingPathComponent("scripts/demo.sh").path

    /// The script running in a folder of the test's own (its `TMPDIR`, so the demo's folder is
    /// seen to go), standard output and error in files; the binaries' zone UTC.
    final class Demo {
        let folder = TemporaryFolder()
        let process: ChildProcess
        let outFile: String
        let errFile: String

        init(_ arguments: [String], environment: [String: String] = [:]) throws {
            outFile = folder.url.appendingPathComponent("demo.out").path
            errFile = folder.url.appendingPathComponent("demo.err").path
            let tmp = folder.url.appendingPathComponent("tmp").path
            try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
            process = try ChildProcess(
                DemoTests.script, arguments + [Repository.binary], outputFile: outFile, errorFile: errFile,
                environment: ["TZ": "UTC", "TMPDIR": tmp].merging(environment) { _, new in new })
        }

        var out: String { (try? String(contentsOfFile: outFile, encoding: .utf8)) ?? "" }
        var err: String { (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? "" }
        /// What is left in the demo's `TMPDIR` (its own folder must be gone at the end).
        var leftInTemp: [String] { (try? FileManager.default.contentsOfDirectory(atPath: folder.url.appendingPathComponent("tmp").path)) ?? ["?"] }

        /// The PIDs the banner names: mosquitto, the simulator, the daemon.
        var children: [pid_t] {
            err.matches(of: /\(pid (\d+)\)/).compactMap { pid_t($0.output.1) }
        }

        func waitForExit(seconds: Int) async -> Bool {
            if await process.waitForExit(timeout: .seconds(seconds)) { return true }
            process.send(SIGKILL)
            return false
        }
    }

    /// One push as the demo printed it: the NDJSON line and the line in words under it.
    struct PrintedPush {
        var line: JSONValue
        var summary: String
    }

    /// Standard output read back: every `{…}` line with the line after it. Anything else is a failure.
    static func pushes(in out: String) throws -> [PrintedPush] {
        var lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        var pushes: [PrintedPush] = []
        var index = 0
        while index < lines.count {
            let line = try JSONValue(parsing: lines[index])
            try #require(index + 1 < lines.count, "the last push has no line in words: \(lines[index])")
            pushes.append(PrintedPush(line: line, summary: lines[index + 1]))
            index += 2
        }
        return pushes
    }

    /// Applies the pushes in order and checks each: the first is the whole document, every later
    /// one a merge patch (not the whole document again), each giving a document the widget spec
    /// accepts, and the line in words is `PushSummary`'s for that document at the push's time.
    /// Returns the documents.
    static func checkPushes(_ pushes: [PrintedPush]) throws -> [JSONValue] {
        var shown = JSONValue.null
        var documents: [JSONValue] = []
        for (index, push) in pushes.enumerated() {
            let patch = try #require(push.line["patch"]?["content"], "\(push.line)")
            let widget = try #require(push.line["widget"]?.stringValue)
            let at = try #require(push.line["t"]?.stringValue.flatMap(RFC3339.parse), "\(push.line)")
            #expect(widget == "power")
            if index == 0 {
                #expect(patch["template"] == "flow", "the first push is the whole document: \(patch)")
            } else {
                #expect(patch["template"] == nil && patch != shown, "push \(index) is a merge patch: \(patch)")
            }
            shown = MergePatch.apply(patch, to: shown)
            let document = try WidgetContent(json: shown)
            #expect(document.validate(now: at).isEmpty, "push \(index): \(document.validate(now: at))")
            // The widget in words, then the day's accounts once the engine handed them over. A meter
            // a loaded machine kept silent for its stale_after (30 min: 2.5 s at 720x) is held, and
            // its node marked so: the line is the one for the document with some of its nodes held.
            let places = if case .flow(let flow) = document { flow.nodes.map(\.place) } else { [NodePlace]() }
            let heldSets = (0..<(1 << places.count)).map { bits in Set(places.indices.filter { bits & (1 << $0) != 0 }.map { places[$0] }) }
            let matches = heldSets.contains { held in
                let words = PushSummary.line(widget: widget, document: document, held: HeldMark(nodes: held), at: at, zone: FixedOffsetZone())
                return push.summary == words || (push.summary.hasPrefix(words + "; day so far: production ") && push.summary.hasSuffix(" kWh out"))
            }
            #expect(
                matches,
                "push \(index): \(push.summary)\n  the document's words, nothing held: \(PushSummary.line(widget: widget, document: document, held: .none, at: at, zone: FixedOffsetZone()))\n  its patch: \(patch)")
            documents.append(shown)
        }
        return documents
    }

    /// Every child the demo started is gone (not even left to be reaped), and so is its folder.
    static func expectNothingLeft(_ demo: Demo) {
        let children = demo.children
        #expect(children.count == 3, "\(demo.err)")
        for pid in children where kill(pid, 0) == 0 {
            Issue.record("pid \(pid) is still there")
            kill(pid, SIGKILL)  // not left behind by a failing test either
        }
        #expect(demo.leftInTemp.isEmpty, "\(demo.leftInTemp)")
    }

    /// `--duration 30`: the whole document, then patches, each said in words as the document
    /// reads, several of them, and then nothing left running.
    @Test func theDemoPrintsEveryPushWithALineInWordsAndStopsByItself() async throws {
        let demo = try Demo(["--duration", "30"])
        #expect(await demo.waitForExit(seconds: 120), "\(demo.err)")
        #expect(demo.process.exitCode == 0, "\(demo.err)")
        let pushes = try Self.pushes(in: demo.out)
        #expect(pushes.count >= 5, "\(demo.out)\n\(demo.err)")
        let documents = try Self.checkPushes(pushes)
        // The home as the demo config names it, every slot there.
        let flow = try #require(documents.last?["flow"])
        #expect(flow["inputs"]?.arrayValue?.first?["name"] == "Solar" && flow["output"]?["name"] == "Home")
        #expect(flow["storage"]?["name"] == "Battery" && flow["exchange"]?["name"] == "Grid")
        // The daemon on the home's clock: the pushes span the home's hours (30 s at 720x are six
        // of them), and every day so far adds up, counters and integrals over the same hours.
        let times = pushes.compactMap { $0.line["t"]?.stringValue.flatMap(RFC3339.parse) }
        let span = try #require(times.last).timeIntervalSince(try #require(times.first))
        #expect(span >= 3 * 3600, "the pushes span \(span) s: \(demo.out)")
        // In equals out, except while the derived home's balance is below 0 (a meter's export or
        // charge counted before the others of its moment, at the start of the day): its day shows
        // 0, and out exceeds in by what is kept below the clamp.
        let sides = pushes.compactMap { push -> (inKWh: String, outKWh: String, consumption: String?)? in
            guard let day = push.summary.components(separatedBy: "; day so far: ").last, push.summary.contains("; day so far: ") else { return nil }
            let totals = day.components(separatedBy: " kWh").compactMap { $0.components(separatedBy: "= ").last }
            let consumption = day.components(separatedBy: "consumption ").dropFirst().first?.split(separator: " ").first.map(String.init)
            return totals.count >= 2 ? (totals[0], totals[1], consumption) : nil
        }
        let addUp = sides.allSatisfy { side in
            side.inKWh == side.outKWh || (side.consumption == "0" && (Double(side.inKWh) ?? .nan) < (Double(side.outKWh) ?? .nan))
        }
        #expect(!sides.isEmpty && addUp, "\(sides)")
        #expect(demo.err.contains("flowbridge run --dry-run --summary"), "\(demo.err)")
        #expect(demo.err.contains("30 s passed: stopping"), "\(demo.err)")
        #expect(demo.err.contains("stopped (dry run: nothing delivered, no state written)"), "the daemon stopped gracefully: \(demo.err)")
        Self.expectNothingLeft(demo)
    }

    /// Ctrl-C (SIGINT to the script, whose children are in sessions of their own): the daemon
    /// stops gracefully, then the simulator and the broker; nothing is left behind. The first push
    /// comes within a minute of the start.
    @Test func ctrlCStopsTheDaemonTheSimulatorAndTheBroker() async throws {
        let demo = try Demo([])
        _ = await eventually(timeout: .seconds(60)) { demo.out.split(separator: "\n").count >= 2 || !demo.process.isRunning }
        #expect(demo.out.split(separator: "\n").count >= 2, "no push within a minute: \(demo.err)")
        demo.process.send(SIGINT)
        #expect(await demo.waitForExit(seconds: 30), "\(demo.err)")
        #expect(demo.process.exitCode == 0, "\(demo.err)")
        #expect(demo.err.contains("demo: stopping"), "\(demo.err)")
        #expect(demo.err.contains("stopped (dry run: nothing delivered, no state written)"), "\(demo.err)")
        _ = try Self.checkPushes(try Self.pushes(in: demo.out))
        Self.expectNothingLeft(demo)
    }

    /// DEMO_URL and DEMO_TOKEN: the same pushes go to the widget service (a real HTTP server), the
    /// whole document first, then patches, with the token; the widget ends showing what was printed.
    @Test func demoURLAndTokenPushToARealWidget() async throws {
        let service = try await WidgetStandIn()
        let demo = try Demo(["--duration", "20"], environment: ["DEMO_URL": service.url, "DEMO_TOKEN": service.token])
        #expect(await demo.waitForExit(seconds: 120), "\(demo.err)")
        #expect(demo.process.exitCode == 0, "\(demo.err)")
        #expect(demo.err.contains("sent to the widget at DEMO_URL"), "\(demo.err)")
        #expect(demo.err.contains("pushes go to stdout, push:power (\(service.url))"), "\(demo.err)")
        #expect(!demo.err.contains(service.token) && !demo.out.contains(service.token))
        let documents = try Self.checkPushes(try Self.pushes(in: demo.out))
        #expect(documents.count >= 3)
        let seen = try #require(await service.waitUntil { $0.document == documents.last })
        #expect(seen.requests.first?.method == "PUT")
        #expect(seen.requests.dropFirst().allSatisfy { $0.method == "PATCH" && $0.succeeded }, "\(seen.requests.map(\.method))")
        #expect(seen.requests.allSatisfy { $0.headers["authorization"] == "right" })
        Self.expectNothingLeft(demo)
    }

    /// Without DEMO_TOKEN, DEMO_URL alone is refused before anything starts.
    @Test func demoURLWithoutATokenIsRefused() async throws {
        let demo = try Demo(["--duration", "5"], environment: ["DEMO_URL": "http://127.0.0.1:9/widget"])
        #expect(await demo.waitForExit(seconds: 30))
        #expect(demo.process.exitCode == 64)
        #expect(demo.err.contains("DEMO_TOKEN is not"), "\(demo.err)")
        #expect(demo.children.isEmpty && demo.leftInTemp.isEmpty)
    }
}

/// The demo's widget drawn from a simulated day, as `make screenshot` draws it: the picture and
/// the day chart name every node of `Config/demo.yaml`.
@Suite struct DemoPictureTests {
    @Test func theDemoDayDrawsEveryNodeOfTheDemoConfig() async throws {
        let folder = TemporaryFolder()
        let trace = folder.url.appendingPathComponent("demo-day.ndjson").path
        let pictures = folder.url.appendingPathComponent("demo").path
        let simulated = try await SimulateTests.run(["simulate", "--trace", trace, "--date", "2026-06-21", "--speed", "60"], in: folder)
        #expect(simulated.status == 0, "\(simulated.err)")
        let replayed = try await SimulateTests.run(["replay", "--config", SimulateTests.demoConfig, "--svg", pictures, trace], in: folder)
        #expect(replayed.status == 0, "\(replayed.err)")

        let config = try DaemonConfig.parse(try String(contentsOfFile: SimulateTests.demoConfig, encoding: .utf8), file: "demo.yaml")
        #expect(!config.flow.widgets.isEmpty)
        for widget in config.flow.widgets {
            let picture = try String(contentsOfFile: "\(pictures)/\(widget.name).svg", encoding: .utf8)
            let chart = try String(contentsOfFile: "\(pictures)/\(widget.name)-day-2026-06-21.svg", encoding: .utf8)
            #expect(widget.nodes.count == 4)
            for (place, node) in widget.nodes {
                let name = try #require(node.name, "the demo names every node (\(place))")
                #expect(picture.contains(">\(name)</tspan>"), "\(widget.name).svg lacks \(name)")
                #expect(chart.contains("data-name=\"\(name)\""), "the day chart lacks \(name)")
            }
        }
    }
}
