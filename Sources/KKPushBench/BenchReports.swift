import Foundation
package import KKPushClient
import KKPushCore

/// What `bench faults` reports: every fault's row of every run, and whether all of them held. Its text is the table
/// and the verdict; its JSON `{count, runs, payload_bytes, ok, faults}`.
package struct FaultMatrixReport: Encodable, Sendable {
    /// Pushes per fault, runs of the matrix, and the payload's padding.
    package var count: Int
    package var runs: Int
    package var payloadBytes: Int
    /// One row per fault and run, in the order they ran.
    package var rows: [FaultMatrix.Row]

    package init(count: Int, runs: Int, payloadBytes: Int, rows: [FaultMatrix.Row]) {
        self.count = count
        self.runs = runs
        self.payloadBytes = payloadBytes
        self.rows = rows
    }

    /// Every push of every fault had exactly one result and every duplicate was flagged.
    package var ok: Bool { rows.allSatisfy(\.ok) }

    enum CodingKeys: String, CodingKey {
        case count, runs, ok
        case payloadBytes = "payload_bytes"
        case rows = "faults"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(count, forKey: .count)
        try c.encode(runs, forKey: .runs)
        try c.encode(payloadBytes, forKey: .payloadBytes)
        try c.encode(ok, forKey: .ok)
        try c.encode(rows, forKey: .rows)
    }

    /// The table, a line per run count when there were several, and the verdict.
    package var textLines: [String] {
        var lines = [FaultMatrix.table(rows)]
        if runs > 1 { lines.append("\(runs) runs: \(rows.filter(\.ok).count) of \(rows.count) rows ok") }
        let bad = rows.filter { !$0.ok }.map(\.fault)
        lines.append(
            ok ? "ok: every push had one result; every duplicate was flagged" : "FAILED: \(bad.joined(separator: ", "))"
        )
        return lines
    }
}

/// What `bench` (the rate benchmark) reports: the pushes sent and accepted, how many were in flight, the time and
/// the rate.
package struct RateBenchReport: Encodable, Sendable {
    /// Pushes sent, and accepted.
    package var sent: Int
    package var accepted: Int
    /// The most in flight asked for in all, the cap per connection when one was given (nil: as many as the server
    /// allows, within the most in flight), and the loop threads (a connection each).
    package var requestedInFlight: Int
    package var perConnectionCap: Int?
    package var threads: Int
    /// What the connections actually carried: the most streams in flight on one at once, the connections opened.
    package var usage: APNsClientUsage
    /// From the first push to the last outcome.
    package var seconds: Double
    /// The first outcome that was not an acceptance, in words.
    package var firstProblem: String?

    package init(_ result: RateBench.Result, sent: Int, requestedInFlight: Int, perConnectionCap: Int?, threads: Int) {
        self.sent = sent
        self.accepted = result.accepted
        self.requestedInFlight = requestedInFlight
        self.perConnectionCap = perConnectionCap
        self.threads = threads
        self.usage = result.usage
        self.seconds = result.elapsed.seconds
        self.firstProblem = result.firstProblem
    }

    /// Pushes a second over the whole run.
    package var perSecond: Double { Double(sent) / seconds }

    /// Every push was accepted.
    package var ok: Bool { accepted == sent }

    enum CodingKeys: String, CodingKey {
        case sent, accepted, threads, seconds, connections
        case requestedInFlight = "requested_in_flight"
        case perConnection = "per_connection"
        case perConnectionCap = "per_connection_cap"
        case inFlightWindow = "in_flight_window"
        case perSecond = "per_second"
        case firstProblem = "first_problem"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sent, forKey: .sent)
        try c.encode(accepted, forKey: .accepted)
        try c.encode(requestedInFlight, forKey: .requestedInFlight)
        try c.encode(usage.peakStreamsPerConnection, forKey: .perConnection)
        try c.encode(perConnectionCap, forKey: .perConnectionCap)
        try c.encode(usage.connectionsOpened, forKey: .connections)
        try c.encode(usage.inFlightWindow, forKey: .inFlightWindow)
        try c.encode(threads, forKey: .threads)
        try c.encode(seconds, forKey: .seconds)
        try c.encode(perSecond, forKey: .perSecond)
        try c.encode(firstProblem, forKey: .firstProblem)
    }

    /// What a benchmark harness reads: the counts line (what was asked for and what the connections actually
    /// carried), then `<rate> req/s` alone on the last line.
    package var textLines: [String] {
        let limit =
            perConnectionCap.map { "capped at \($0) a connection" }
            ?? "as many as the server allowed, within \(requestedInFlight / max(1, threads)) a connection"
        let connections = usage.connectionsOpened == 1 ? "1 connection" : "\(usage.connectionsOpened) connections"
        let spread = threads == 1 ? connections : "\(connections), \(threads) threads"
        let counts =
            "\(sent) sent, \(accepted) accepted, \(requestedInFlight) requested in flight: at most \(usage.peakStreamsPerConnection) on a connection (\(limit)), \(spread), \(String(format: "%.3f", seconds)) s"
        // Following the server, the client sizes what it keeps in flight to the round trip: say where it ended.
        let window =
            perConnectionCap == nil && usage.inFlightWindow > 0
            ? ["in flight at the end: \(usage.inFlightWindow) allowed (sized to the round trip and the rate)"] : []
        return [counts] + window + [String(format: "%.0f req/s", perSecond)]
    }
}
