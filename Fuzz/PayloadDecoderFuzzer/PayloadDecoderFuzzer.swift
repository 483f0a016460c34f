import FuzzChecks

/// `make fuzz`: PayloadDecoderProperty under libFuzzer; built normally, a replay of its corpus.
@main enum PayloadDecoderFuzzer {
    static func main() { FuzzDriver.run(PayloadDecoderProperty.self) }
}
