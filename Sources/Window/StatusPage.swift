import FlowCore
import FoundationEssentials
import Rendering

/// `/`: the status page, one HTML document with no script and nothing from elsewhere (its style
/// is `style.css` beside it), that reloads itself. Every link is relative, so it works behind Home
/// Assistant's ingress, which serves it under a path prefix. Every text from the config or the
/// broker goes through `Markup.escape`.
public struct StatusPage {
    let snapshot: WindowSnapshot
    /// Seconds between reloads (`<meta http-equiv="refresh">`).
    let refreshSeconds: Int

    public init(snapshot: WindowSnapshot, refreshSeconds: Int) {
        self.snapshot = snapshot
        self.refreshSeconds = refreshSeconds
    }

    public func html() -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta http-equiv="refresh" content="\(refreshSeconds)">
            <title>flowbridge</title><link rel="stylesheet" href="style.css"></head>
            <body><header><h1>flowbridge</h1><p>\(e(snapshot.version)) · \(e(snapshot.localText(snapshot.at))) · \(brokerText)</p></header>

            """
        page += widgetsSection + todaySection + pricesSection + chartsSection + bookSection + sourcesSection + sinksSection
        page += """
            <footer><a href="metrics">metrics</a> · <a href="api/v1/state">state (JSON)</a> · <a href="api/v1/history">history (JSON)</a> · <a href="api/v1/history?format=csv">history (CSV)</a></footer>
            </body></html>

            """
        return page
    }

    private func e(_ text: String) -> String { Markup.escape(text) }

    private var brokerText: String {
        let broker = snapshot.broker
        guard let since = broker.connectedSince else {
            return "<span class=\"bad\">broker \(e(broker.address)) not connected\(broker.waitingCause.map { ": " + e($0) } ?? "")</span>"
        }
        return "broker \(e(broker.address)) connected since \(e(snapshot.localText(since))), \(broker.reconnects) reconnects"
    }

    private var widgetsSection: String {
        var html = "<section id=\"widgets\"><h2>Widgets</h2><div class=\"cards\">\n"
        for widget in snapshot.widgets {
            html += "<figure class=\"widget\" id=\"widget-\(e(widget.name))\"><figcaption>\(e(widget.name))</figcaption>"
            if let document = widget.document {
                html += Self.inline(WidgetPicture.svg(document.content, held: document.held, at: snapshot.at))
            } else {
                html += "<p>nothing to show yet</p>"
            }
            html += "</figure>\n"
        }
        return html + "</div></section>\n"
    }

    private var todaySection: String {
        let flows = snapshot.widgets.filter { $0.todayKWh != nil }
        guard !flows.isEmpty else { return "" }
        var html = "<section id=\"today\"><h2>Today</h2>\n"
        for widget in flows {
            html += "<table class=\"accounts\"><caption>\(e(widget.name))</caption><tr><th>account</th><th>today</th></tr>\n"
            for (account, energy) in (widget.todayKWh ?? [:]).sorted(by: { $0.key < $1.key }) {
                html += "<tr><td>\(account)</td><td class=\"n\">\(DisplayNumber.fixed(energy, decimals: 2)) kWh</td></tr>\n"
            }
            if let money = widget.money {
                let currency = money.currency
                let rows: [(String, Double?)] = [
                    ("import cost", money.importCost), ("export earnings", money.exportEarnings), ("standing charge", money.standingCharge),
                    ("net cost", money.netCost), ("saved by solar and battery", money.saved),
                ]
                for case let (label, amount?) in rows { html += "<tr><td>\(label)</td><td class=\"n\">\(e(currency.text(amount)))</td></tr>\n" }
                for (account, energy) in money.shownUnpricedKWh.sorted(by: { $0.key < $1.key }) {
                    html += "<tr><td class=\"bad\">\(account) without a price</td><td class=\"n\">\(DisplayNumber.fixed(energy, decimals: 3)) kWh</td></tr>\n"
                }
            }
            html += "</table>\n"
        }
        return html + "</section>\n"
    }

    private var pricesSection: String {
        guard !snapshot.prices.isEmpty else { return "" }
        var html = "<section id=\"prices\"><h2>Prices</h2><table><tr><th>direction</th><th>now</th><th>next change</th></tr>\n"
        for price in snapshot.prices {
            let now = price.pricePerKWh.map { "\(DisplayNumber.fixed($0, decimals: 4)) \(e(price.currencyCode))/kWh" } ?? "<span class=\"bad\">unknown</span>"
            let then = price.nextPricePerKWh.map { ", then \(DisplayNumber.fixed($0, decimals: 4)) \(e(price.currencyCode))/kWh" } ?? ""
            let next = price.nextChange.map { e(snapshot.localText($0)) + then } ?? "not known"
            html += "<tr><td>\(price.account)</td><td class=\"n\">\(now)</td><td>\(next)</td></tr>\n"
        }
        return html + "</table></section>\n"
    }

    private var chartsSection: String {
        let charts = snapshot.widgets.compactMap(\.chart)
        guard !charts.isEmpty else { return "" }
        return "<section id=\"chart\"><h2>Today's power</h2>\n" + charts.map { "<figure>" + Self.inline($0.svg()) + "</figure>\n" }.joined() + "</section>\n"
    }

    private var bookSection: String {
        guard let periods = snapshot.periods else { return "" }
        return "<section id=\"book\"><h2>The last 30 days</h2>\n" + PeriodBars(rows: periods.days, currencyCode: periods.currencyCode).svg()
            + PeriodBars.table(periods.days, currencyCode: periods.currencyCode, id: "days")
            + "<h2>The months of the year</h2>\n" + PeriodBars(rows: periods.months, currencyCode: periods.currencyCode).svg()
            + PeriodBars.table(periods.months, currencyCode: periods.currencyCode, id: "months") + "</section>\n"
    }

    private var sourcesSection: String {
        var html = """
            <section id="sources"><h2>Sources</h2><table><tr><th>source</th><th>topic</th><th>last value</th><th>age</th><th>state</th>\
            <th>readings</th><th>no reading</th><th>decode errors</th><th>last decode error</th></tr>

            """
        for source in snapshot.sources {
            let value = source.value.map { "\(DisplayNumber.fixed($0, decimals: 3)) \(e(source.unit))" } ?? "–"
            let age = source.readingAt.map { Self.ageText(snapshot.age(of: $0)) } ?? "–"
            let lastError = source.lastError.map { "\(e($0.text)) (\(Self.ageText(snapshot.age(of: $0.at))) ago)" } ?? "–"
            html += """
                <tr class="\(source.freshness.rawValue)"><td>\(e(source.name))</td><td><code>\(e(source.topic))</code></td><td class="n">\(value)</td>\
                <td class="n">\(age)</td><td class="state">\(source.freshness.rawValue)</td><td class="n">\(source.readings)</td>\
                <td class="n">\(source.noReading)</td><td class="n">\(source.rejected)</td><td class="error">\(lastError)</td></tr>

                """
        }
        return html + "</table></section>\n"
    }

    private var sinksSection: String {
        guard !snapshot.sinks.isEmpty else { return "" }
        var html = "<section id=\"sinks\"><h2>Deliveries</h2><table><tr><th>sink</th><th>last delivery</th><th>result</th><th>failures in a row</th><th>waiting</th><th>counts</th></tr>\n"
        for sink in snapshot.sinks {
            let health = sink.health
            let when = health?.lastAt.map { "\(e(snapshot.localText($0))) (\(Self.ageText(snapshot.age(of: $0))) ago)" } ?? "none yet"
            let result = health?.lastResult.map { e($0.rawValue) + (health?.lastDetail.map { ": " + e($0) } ?? "") } ?? "–"
            let counts = (health?.results ?? []).map { "\(e($0.result.rawValue)) \($0.count)" }.joined(separator: ", ")
            html += """
                <tr><td>\(e(sink.destination))</td><td>\(when)</td><td>\(result)</td><td class="n">\(health?.failuresInARow ?? 0)</td>\
                <td>\(health?.waiting == true ? "yes" : "no")</td><td>\(counts)</td></tr>

                """
        }
        return html + "</table></section>\n"
    }

    /// An SVG document's markup as an element inside HTML.
    static func inline(_ svg: String) -> String {
        guard svg.hasPrefix("<?xml"), let end = svg.firstRange(of: "?>") else { return svg }
        return String(svg[end.upperBound...])
    }

    /// `42 s`, `5 min`, `3 h`, `2 d`.
    static func ageText(_ seconds: Double) -> String {
        switch seconds {
        case ..<120: "\(Int(seconds)) s"
        case ..<7200: "\(Int(seconds / 60)) min"
        case ..<172_800: "\(Int(seconds / 3600)) h"
        default: "\(Int(seconds / 86400)) d"
        }
    }

    /// The page's style: served as `style.css`, since the page's policy allows no inline style.
    public static let css = """
        body{font-family:system-ui,sans-serif;margin:1em;background:#f6f7f9;color:#1b1f24}
        h1{margin:0;font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
        table{border-collapse:collapse;margin:.5em 0;background:#fff}td,th{padding:.25em .6em;border-bottom:1px solid #e3e6ea;text-align:left}
        td.n{text-align:right;font-variant-numeric:tabular-nums}
        .cards{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}figcaption{font-weight:600}
        svg{max-width:100%;height:auto}
        tr.stale td.state,tr.silent td.state,.bad{color:#b3261e;font-weight:600}tr.fresh td.state{color:#1e7b34}
        footer{margin-top:2em;font-size:.9em}

        """
}
