import FuzzChecks

/// `make fuzz`: MergePatchProperty under libFuzzer; built normally, a replay of its corpus.
@main enum MergePatchFuzzer {
    static func main() { FuzzDriver.run(MergePatchProperty.self) }
}
