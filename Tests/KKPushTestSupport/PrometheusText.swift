public import Foundation
import KKPushHTTP
import NIOHTTP1

/// A strict reader of the Prometheus text exposition format (version 0.0.4), for the tests of the
/// metrics endpoints and `--metrics-file` (promtool is not on the machine). It refuses anything a
/// scraper could stumble on: a malformed line, a sample without `# TYPE` (or `# HELP`) before it, a
/// second TYPE for a name, a family split in two, a duplicate series, a bad name or label, a value
/// that is not a float, a histogram without `le`, `_sum` or `_count`, or whose buckets are not
/// cumulative or disagree with `_count`.
public struct PrometheusExposition: Sendable {
    /// One sample line.
    public struct Sample: Sendable, Hashable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    /// A line the reader refuses, with its number (from 1).
    public struct ParseError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// The samples in order.
    public private(set) var samples: [Sample] = []
    /// `# TYPE` per family name.
    public private(set) var types: [String: String] = [:]
    /// `# HELP` per family name.
    public private(set) var helps: [String: String] = [:]

    /// Reads `text`; throws ``ParseError`` at the first line it refuses.
    public init(parsing text: String) throws {
        var finished: Set<String> = []
        var current: String? = nil
        var seen: Set<String> = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if let last = lines.last, !last.isEmpty {
            throw ParseError(line: lines.count, message: "the text does not end with a newline")
        }
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let line = String(raw)
            func fail(_ message: String) -> ParseError { ParseError(line: number, message: message) }
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else { continue }
                let name = parts[2]
                guard Self.isMetricName(name) else { throw fail("bad metric name '\(name)'") }
                if parts[1] == "TYPE" {
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3])
                    else { throw fail("bad TYPE line") }
                    guard types[name] == nil else { throw fail("a second TYPE for \(name)") }
                    guard !finished.contains(name) else { throw fail("TYPE of \(name) after its samples") }
                    types[name] = parts[3]
                } else {
                    guard helps[name] == nil else { throw fail("a second HELP for \(name)") }
                    helps[name] = parts.count == 4 ? parts[3] : ""
                }
                if current != name, let current { finished.insert(current) }
                current = name
                continue
            }
            let sample = try Self.sample(line, fail: fail)
            let family = Self.family(of: sample.name, types: types)
            guard let type = types[family] else { throw fail("sample \(sample.name) without a TYPE line before it") }
            guard helps[family] != nil else { throw fail("sample \(sample.name) without a HELP line") }
            guard !finished.contains(family) else { throw fail("family \(family) split in two") }
            if current != family, let current { finished.insert(current) }
            current = family
            if type == "histogram" {
                if sample.name == family + "_bucket" {
                    guard sample.labels["le"] != nil else { throw fail("a bucket without le") }
                } else if sample.name != family + "_sum" && sample.name != family + "_count" {
                    throw fail("\(sample.name) is not a histogram sample of \(family)")
                }
            } else if sample.name != family {
                throw fail("\(sample.name) is not a sample of \(type) \(family)")
            }
            let key =
                sample.name + "{"
                + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: ",") + "}"
            guard seen.insert(key).inserted else { throw fail("duplicate series \(key)") }
            samples.append(sample)
        }
        try checkHistograms()
    }

    /// The value of the series `name` with exactly `labels`, or nil.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sum of the series `name` whose labels include `matching`.
    public func sum(_ name: String, matching: [String: String] = [:]) -> Double {
        series(name, matching: matching).reduce(0) { $0 + $1.value }
    }

    /// The series `name` whose labels include `matching`.
    public func series(_ name: String, matching: [String: String] = [:]) -> [Sample] {
        samples.filter { s in s.name == name && matching.allSatisfy { s.labels[$0.key] == $0.value } }
    }

    /// The family names (those with a TYPE line).
    public var families: [String] { types.keys.sorted() }

    // MARK: Lines

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" || first == ":" else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" || $0 == ":" }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" }
    }

    /// The family a sample belongs to: itself, or a histogram/summary's name without its suffix.
    static func family(of name: String, types: [String: String]) -> String {
        if types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let t = types[base], t == "histogram" || t == "summary" { return base }
        }
        return name
    }

    static func sample(_ line: String, fail: (String) -> ParseError) throws -> Sample {
        let chars = Array(line.unicodeScalars)
        var i = 0
        var name = ""
        while i < chars.count, chars[i] != "{", chars[i] != " " {
            name.unicodeScalars.append(chars[i])
            i += 1
        }
        guard isMetricName(name) else { throw fail("bad metric name '\(name)'") }
        var labels: [String: String] = [:]
        if i < chars.count, chars[i] == "{" {
            i += 1
            while true {
                guard i < chars.count else { throw fail("unterminated label set") }
                if chars[i] == "}" {
                    i += 1
                    break
                }
                var label = ""
                while i < chars.count, chars[i] != "=" {
                    label.unicodeScalars.append(chars[i])
                    i += 1
                }
                guard isLabelName(label) else { throw fail("bad label name '\(label)'") }
                guard i + 1 < chars.count, chars[i] == "=", chars[i + 1] == "\"" else {
                    throw fail("label \(label) without =\"")
                }
                i += 2
                var value = ""
                var closed = false
                while i < chars.count {
                    let c = chars[i]
                    if c == "\\" {
                        guard i + 1 < chars.count else { throw fail("dangling escape") }
                        switch chars[i + 1] {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw fail("bad escape in label \(label)")
                        }
                        i += 2
                        continue
                    }
                    if c == "\"" {
                        closed = true
                        i += 1
                        break
                    }
                    value.unicodeScalars.append(c)
                    i += 1
                }
                guard closed else { throw fail("unterminated value of label \(label)") }
                guard labels[label] == nil else { throw fail("label \(label) twice") }
                labels[label] = value
                guard i < chars.count else { throw fail("unterminated label set") }
                if chars[i] == "," {
                    i += 1
                } else if chars[i] != "}" {
                    throw fail("expected , or } after label \(label)")
                }
            }
        }
        guard i < chars.count, chars[i] == " " else { throw fail("no space before the value") }
        let rest = String(String.UnicodeScalarView(chars[(i + 1)...])).split(
            separator: " ", omittingEmptySubsequences: false)
        guard rest.count == 1 || rest.count == 2 else { throw fail("expected a value and an optional timestamp") }
        guard let value = parseFloat(String(rest[0])) else { throw fail("bad value '\(rest[0])'") }
        if rest.count == 2, Int64(rest[1]) == nil { throw fail("bad timestamp '\(rest[1])'") }
        return Sample(name: name, labels: labels, value: value)
    }

    static func parseFloat(_ text: String) -> Double? {
        switch text {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard !text.isEmpty, text.unicodeScalars.allSatisfy({ "0123456789.eE+-".unicodeScalars.contains($0) })
            else { return nil }
            return Double(text)
        }
    }

    private func checkHistograms() throws {
        for (family, type) in types where type == "histogram" {
            var groups: [[String: String]: [(le: Double, count: Double)]] = [:]
            for s in series(family + "_bucket") {
                var rest = s.labels
                let le = rest.removeValue(forKey: "le")!
                guard let bound = Self.parseFloat(le) else {
                    throw ParseError(line: 0, message: "\(family): bad le '\(le)'")
                }
                groups[rest, default: []].append((bound, s.value))
            }
            for (labels, buckets) in groups {
                let sorted = buckets.sorted { $0.le < $1.le }
                guard sorted.last?.le == .infinity else {
                    throw ParseError(line: 0, message: "\(family)\(labels): no +Inf bucket")
                }
                for (a, b) in zip(sorted, sorted.dropFirst()) where b.count < a.count {
                    throw ParseError(line: 0, message: "\(family)\(labels): buckets not cumulative")
                }
                guard let count = value(family + "_count", labels), value(family + "_sum", labels) != nil else {
                    throw ParseError(line: 0, message: "\(family)\(labels): no _count or _sum")
                }
                guard count == sorted.last!.count else {
                    throw ParseError(line: 0, message: "\(family)\(labels): _count \(count) is not the +Inf bucket")
                }
            }
        }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// One `GET /metrics` through curl (a real HTTP client), off Swift's cooperative threads.
public struct MetricsScrape: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The `content-type` header.
    public var contentType: String?
    /// The body.
    public var body: String

    /// The body read by ``PrometheusExposition`` (throws if it is not valid exposition text).
    public func exposition() throws -> PrometheusExposition { try PrometheusExposition(parsing: body) }

    /// GETs `url` (`http://host:port/path`, with `Authorization: Bearer <bearer>` if given), bounded by `timeout`
    /// seconds. In process (the package's HTTP/1.1 client), not through curl: a scrape is what these tests read, not
    /// how curl reads it, and a scrape meant to fall inside a batch must not wait for a process slot.
    public static func get(_ url: String, bearer: String? = nil, timeout: TimeInterval = 20) async throws
        -> MetricsScrape
    {
        guard let parts = URLComponents(string: url), parts.scheme == "http", let host = parts.host,
            let port = parts.port
        else { throw MetricsScrapeError(message: "not an http://host:port URL: \(url)") }
        let client = HTTP1Client(
            host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port, maximumConnections: 1,
            timeout: timeout)
        defer { client.shutdown() }
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        let target = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        let query = parts.percentEncodedQuery.map { "?" + $0 } ?? ""
        let response: HTTP1Client.Response
        do {
            response = try await client.send(method: "GET", target: target + query, headers: headers)
        } catch {
            throw MetricsScrapeError(message: "GET \(url): \(error)")
        }
        return MetricsScrape(
            status: response.status, contentType: response.headers.first(name: "content-type"),
            body: String(decoding: response.body, as: UTF8.self))
    }

    init(status: Int, contentType: String? = nil, body: String) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// A scrape that got no HTTP answer.
public struct MetricsScrapeError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
