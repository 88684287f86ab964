import Foundation
import KKPushClient
import Testing

@testable import KKPushBench

/// The bench harnesses' reports, as KKPushBench makes them: the fault matrix's JSON (`note` null when a row has
/// none, seconds to the millisecond) and verdict, the rate benchmark's lines, the soak's figures.
@Suite("The bench reports")
struct BenchReportTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    static func row(_ fault: String, unflagged: Int = 0, note: String? = nil) -> FaultMatrix.Row {
        FaultMatrix.Row(
            fault: fault, pushes: 10, results: 10, withoutOneResult: 0, accepted: 9, rejected: 1, failed: 0,
            flagged: 2, deliveredTwice: 2, unflaggedDuplicates: unflagged, retried: 3, connections: 2,
            seconds: 1.23456, exitStatus: 1, note: note)
    }

    @Test("The fault matrix: one object per row with every field, and the verdict over all of them")
    func faultMatrix() throws {
        let clean = FaultMatrixReport(count: 10, runs: 1, payloadBytes: 0, rows: [Self.row("clean")])
        let object = try Self.object(clean)
        #expect(object["ok"] as? Bool == true && object["payload_bytes"] as? Int == 0 && object["runs"] as? Int == 1)
        let row = try #require((object["faults"] as? [[String: Any]])?.first)
        #expect(row["note"] is NSNull && row["seconds"] as? Double == 1.235 && row["send_batch_exit"] as? Int == 1)
        #expect(row["possibly_duplicated"] as? Int == 2 && row["unflagged_duplicates"] as? Int == 0)
        #expect(row.count == 17, "\(row.keys.sorted())")
        #expect(clean.textLines.last == "ok: every push had one result; every duplicate was flagged")

        let bad = FaultMatrixReport(
            count: 10, runs: 2, payloadBytes: 100,
            rows: [Self.row("clean"), Self.row("reset", unflagged: 1), Self.row("stall", note: "mock gone")])
        let badObject = try Self.object(bad)
        #expect(!bad.ok && badObject["ok"] as? Bool == false)
        #expect(bad.textLines.suffix(2) == ["2 runs: 1 of 3 rows ok", "FAILED: reset, stall"])
        #expect(bad.textLines[0].contains("stall: mock gone"))
    }

    @Test("The rate benchmark: the counts line with what the connections carried, then the rate alone")
    func rateBench() throws {
        var usage = APNsClientUsage()
        usage.peakStreamsPerConnection = 48
        usage.connectionsOpened = 2
        let result = RateBench.Result(
            elapsed: .seconds(2), accepted: 999, firstProblem: "rejected 400 BadDeviceToken", usage: usage)
        let report = RateBenchReport(result, sent: 1000, requestedInFlight: 100, perConnectionCap: 50, threads: 2)
        #expect(!report.ok && report.perSecond == 500)
        #expect(
            report.textLines == [
                "1000 sent, 999 accepted, 100 requested in flight: at most 48 on a connection (capped at 50 a connection), 2 connections, 2 threads, 2.000 s",
                "500 req/s",
            ])
        let object = try Self.object(report)
        #expect(object["first_problem"] as? String == "rejected 400 BadDeviceToken" && object["threads"] as? Int == 2)
        #expect(object["per_connection"] as? Int == 48 && object["per_connection_cap"] as? Int == 50)
        #expect(object["connections"] as? Int == 2)

        usage.peakStreamsPerConnection = 1000
        usage.connectionsOpened = 1
        let following = RateBenchReport(
            RateBench.Result(elapsed: .seconds(1), accepted: 5000, firstProblem: nil, usage: usage), sent: 5000,
            requestedInFlight: 2000, perConnectionCap: nil, threads: 1)
        #expect(
            following.textLines[0]
                == "5000 sent, 5000 accepted, 2000 requested in flight: at most 1000 on a connection (as many as the server allowed, within 2000 a connection), 1 connection, 1.000 s"
        )
        #expect(try Self.object(following)["per_connection_cap"] is NSNull)
    }

    @Test("The soak: its figures, each sample, note null when there is none; the text its verdict")
    func soak() throws {
        let sample = SoakRun.Sample(
            seconds: 12.34, mock: ProcessSample(residentKiB: 2048, descriptors: 20, sockets: 5),
            client: ProcessSample(residentKiB: 4096, descriptors: 30, sockets: 7), written: 100, results: 99)
        let report = SoakRun.Report(
            samples: [sample], written: 100, results: 100, withoutOneResult: 0, faults: ["close"], growth: [],
            judgedGrowth: false, clientExit: 0, note: nil)
        let object = try Self.object(report)
        #expect(object["ok"] as? Bool == true && object["note"] is NSNull && object["pushes"] as? Int == 100)
        let first = try #require((object["samples"] as? [[String: Any]])?.first)
        #expect(first["seconds"] as? Double == 12.3 && first["mock_rss_kib"] as? Int == 2048)
        #expect(first["client_sockets"] as? Int == 7 && first.count == 9)
        #expect(report.textLines.last == "ok")
    }
}
