/// The examples of `spec/flow-template.txt` and `spec/progress-template.txt`, verbatim.
enum SpecExamples {
    static let homeEnergy = """
        {
        "content": {
        "template": "flow",
        "label": "Power",
        "subtitle": "Solar · grid · home",
        "icon": "point.3.filled.connected.trianglepath.dotted",
        "unit": "W",
        "accent_color": "mint",
        "flow": {
        "inputs": [
        { "name": "Solar", "rate": 3200, "total": 12.4, "icon": "sun.max.fill", "color": "yellow" }
        ],
        "output": { "name": "Home", "rate": 1000, "total": 9.8, "icon": "house.fill" },
        "storage": { "name": "Battery", "rate": 800, "level": 76, "icon": "battery.75percent", "color": "green" },
        "exchange": { "name": "Grid", "rate": -1400, "total": 3.1, "icon": "bolt.fill", "color": "cyan" }
        }
        }
        }
        """

    static let incident = """
        {
        "content": {
        "template": "progress",
        "value": 0.6,
        "label": "Pages",
        "subtitle": "6 of 10 acked · INC-2841",
        "icon": "checklist",
        "accent_color": "green",
        "stat_rows": [
        { "label": "Acked", "value": "6" },
        { "label": "Total", "value": "10" },
        { "label": "Severity", "value": "SEV-2" }
        ]
        }
        }
        """

    static let maintenance = """
        {
        "content": {
        "template": "progress",
        "label": "Maintenance",
        "subtitle": "db-primary · read-only",
        "icon": "wrench.and.screwdriver.fill",
        "accent_color": "orange",
        "start_date": "2027-05-10T22:00:00Z",
        "end_date": "2027-05-11T00:00:00Z",
        "value": 0.0
        }
        }
        """
}
