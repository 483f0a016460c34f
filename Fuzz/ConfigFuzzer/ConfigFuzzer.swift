import FuzzChecks

/// `make fuzz`: ConfigProperty under libFuzzer; built normally, a replay of its corpus.
@main enum ConfigFuzzer {
    static func main() { FuzzDriver.run(ConfigProperty.self) }
}
