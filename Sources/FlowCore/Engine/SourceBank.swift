import FoundationEssentials

extension FlowEngine {
    /// The bank of sources: what each source knows (`SourceState`) and which sources a topic
    /// feeds. Owns its share of the state: the readings, saved and restored.
    struct SourceBank: Sendable {
        var sources: [SourceState]
        /// Sources by exact topic, and the wildcard filters to try on any other.
        let exactTopics: [String: [Int]]
        let wildcardTopics: [(filter: TopicFilter, source: Int)]
        /// Per source another's `direction:` reads: the sources it directs. Empty without
        /// `direction:`, and then nothing is looked up per message.
        let directs: [Int: [Int]]

        init(config: FlowConfig) {
            let index = config.sourcePositions
            let directions = config.sources.map { $0.direction?.map { index[$0]! } }
            var directs: [Int: [Int]] = [:]
            for (position, direction) in directions.enumerated() {
                for source in direction?.sources ?? [] { directs[source, default: []].append(position) }
            }
            let flags = Set(directions.flatMap { $0?.flags ?? [] })
            sources = config.sources.indices.map {
                SourceState(config: config.sources[$0], direction: directions[$0], isFlag: flags.contains($0))
            }
            self.directs = directs
            var exact: [String: [Int]] = [:]
            var wildcard: [(TopicFilter, Int)] = []
            for (position, source) in config.sources.enumerated() {
                if source.topic.isExact {
                    exact[source.topic.description, default: []].append(position)
                } else {
                    wildcard.append((source.topic, position))
                }
            }
            exactTopics = exact
            wildcardTopics = wildcard
        }

        /// The sources a message on `topic` feeds, in config order of their kind (exact first).
        func matching(_ topic: String) -> [Int] {
            var matched = exactTopics[topic] ?? []
            for (filter, source) in wildcardTopics where filter.matches(topic) { matched.append(source) }
            return matched
        }

        /// Each source's latest reading (per topic for `combine: sum`), by name.
        var readingsSnapshot: JSONValue {
            var readings: [String: JSONValue] = [:]
            for source in sources {
                guard let reading = source.reading else { continue }
                var entry: [String: JSONValue] = ["value": .number(reading.value), "t": .number(reading.at.timeIntervalSince1970)]
                if source.config.combine == .sum {
                    entry["topics"] = .object(source.topics.mapValues { ["value": .number($0.value), "t": .number($0.at.timeIntervalSince1970)] })
                }
                readings[source.config.name] = .object(entry)
            }
            return .object(readings)
        }

        /// Takes back saved readings of sources the config still has; a reading with an implausible
        /// number or time is named to `skip` and left out.
        mutating func restoreReadings(_ saved: JSONValue?, times: ClosedRange<Double>, dayStart: Date?, skip: (String) -> Void) {
            func reading(_ json: JSONValue, of source: SourceConfig) -> Reading? {
                guard let number = json["value"]?.numberValue, let at = json["t"]?.numberValue, times.contains(at),
                    FlowEngine.isPlausible(number, for: source)
                else { return nil }
                return Reading(value: number, at: Date(timeIntervalSince1970: at))
            }
            for (name, value) in saved?.objectValue ?? [:] {
                guard let position = sources.firstIndex(where: { $0.config.name == name }) else { continue }
                let source = sources[position].config
                if source.combine == .sum {
                    // Per topic, each with its own age; a reading saved as one number (the source was
                    // `combine: latest`) says nothing about its topics and is left out.
                    guard let topics = value["topics"]?.objectValue else { continue }
                    var parts: [String: Reading] = [:]
                    // A topic the filter no longer matches belongs to an older config: left out quietly.
                    for (topic, entry) in topics.prefix(SourceState.maxTopics) where source.topic.matches(topic) {
                        guard let part = reading(entry, of: source) else {
                            skip("the reading of '\(name)' from \(topic)")
                            continue
                        }
                        parts[topic] = part
                    }
                    sources[position].topics = parts
                    sources[position].recombine(dayStart: dayStart)
                } else {
                    guard let restored = reading(value, of: source) else {
                        skip("the reading of '\(name)'")
                        continue
                    }
                    sources[position].reading = restored
                    // The sign saved with it stands until the next magnitude or direction.
                    if sources[position].setup.direction != nil {
                        sources[position].magnitude = Reading(value: abs(restored.value), at: restored.at)
                    }
                }
                sources[position].lastValueAt = sources[position].reading?.at
            }
        }
    }
}
