import FlowCore
import FoundationEssentials

/// `/api/v1/state` and `/api/v1/history`: the snapshot and the book's periods as JSON (and the
/// periods as CSV), for scripts. Times are RFC 3339 in the daemon's zone, energy in kWh.
public enum StateDocument {
    public static func json(_ snapshot: WindowSnapshot) -> JSONValue {
        func time(_ instant: Date?) -> JSONValue {
            instant.map { .string(RFC3339.format($0, utcOffsetSeconds: snapshot.zone.utcOffsetSeconds(at: $0))) } ?? .null
        }
        func number(_ value: Double?) -> JSONValue { value.flatMap { $0.isFinite ? .number($0) : nil } ?? .null }
        func accounts(_ kWh: [EnergyAccount: Double]) -> JSONValue {
            .object(Dictionary(uniqueKeysWithValues: kWh.map { ($0.key.rawValue, number($0.value)) }))
        }
        var widgets: [String: JSONValue] = [:]
        for widget in snapshot.widgets {
            var members: [String: JSONValue] = ["document": widget.document?.content.json ?? .null]
            if let today = widget.todayKWh {
                members["today_kwh"] = accounts(today)
                members["lifetime_kwh"] = accounts(widget.lifetimeKWh)
            }
            if let money = widget.money { members["money"] = money.json }
            widgets[widget.name] = .object(members)
        }
        let sources = snapshot.sources.map { source -> JSONValue in
            .object([
                "name": .string(source.name), "topic": .string(source.topic), "unit": .string(source.unit), "value": number(source.value),
                "at": time(source.readingAt), "age_seconds": number(source.readingAt.map(snapshot.age(of:))),
                "state": .string(source.freshness.rawValue), "readings": .number(Double(source.readings)),
                "no_reading": .number(Double(source.noReading)), "rejected": .number(Double(source.rejected)),
                "last_error": source.lastError.map { error in
                    .object(["text": .string(error.text), "at": time(error.at), "age_seconds": number(snapshot.age(of: error.at))])
                } ?? .null,
            ])
        }
        let sinks = snapshot.sinks.map { sink -> JSONValue in
            let health = sink.health
            return .object([
                "name": .string(sink.name), "destination": .string(sink.destination), "last_at": time(health?.lastAt),
                "last_result": health?.lastResult.map { .string($0.rawValue) } ?? .null, "last_detail": health?.lastDetail.map(JSONValue.string) ?? .null,
                "failures_in_a_row": .number(Double(health?.failuresInARow ?? 0)), "waiting": .bool(health?.waiting ?? false),
                "results": .object(Dictionary(uniqueKeysWithValues: (health?.results ?? []).map { ($0.result.rawValue, .number(Double($0.count))) })),
            ])
        }
        let prices = snapshot.prices.map { price -> JSONValue in
            .object([
                "direction": .string(price.account.rawValue), "price_per_kwh": number(price.pricePerKWh), "currency": .string(price.currencyCode),
                "next_change": time(price.nextChange), "next_price_per_kwh": number(price.nextPricePerKWh),
            ])
        }
        let broker = snapshot.broker
        return .object([
            "at": time(snapshot.at), "version": .string(snapshot.version), "widgets": .object(widgets), "prices": .array(prices),
            "sources": .array(sources), "sinks": .array(sinks),
            "broker": .object([
                "address": .string(broker.address), "connected_since": time(broker.connectedSince),
                "reconnects": .number(Double(broker.reconnects)), "waiting_cause": broker.waitingCause.map(JSONValue.string) ?? .null,
            ]),
        ])
    }

    /// The book's periods: `{"days": [{"period": ..., "kwh": {...}, "net_cost": ...}], "months": [...]}`.
    public static func history(_ periods: PeriodRows) -> JSONValue {
        func rows(_ rows: [PeriodRows.Row]) -> JSONValue {
            .array(rows.map { row in
                .object([
                    "period": .string(row.period),
                    "kwh": .object(Dictionary(uniqueKeysWithValues: row.accountsKWh.map { ($0.key.rawValue, .number($0.value)) })),
                    "net_cost": row.netCost.map(JSONValue.number) ?? .null,
                ])
            })
        }
        return .object(["currency": periods.currencyCode.map(JSONValue.string) ?? .null, "days": rows(periods.days), "months": rows(periods.months)])
    }

    /// The same as CSV: `period,production,consumption,import,export,charge,discharge,net_cost`.
    public static func historyCSV(_ periods: PeriodRows) -> String {
        var csv = "period," + EnergyAccount.allCases.map(\.rawValue).joined(separator: ",") + ",net_cost\n"
        for row in periods.days + periods.months {
            let cells = EnergyAccount.allCases.map { row.accountsKWh[$0].map { "\($0)" } ?? "" }
            csv += "\(csvCell(row.period)),\(cells.joined(separator: ",")),\(row.netCost.map { "\($0)" } ?? "")\n"
        }
        return csv
    }

    /// A cell quoted when it holds a comma, a quote or a line break.
    static func csvCell(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }
}
