import Foundation
import KKPushBackend
import KKPushCore
import KKPushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Fixtures of the backend tests.
enum BackendFixtures {
    static let certificates = Repository.certificates.path

    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let bundleID = "nl.kantinekoning.app"
    static let phoneA = "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"
    static let phoneB = "1F2E3D4C-5B6A-4789-8A9B-0C1D2E3F4A5B"

    static func token(_ seed: UInt8) -> String {
        (0..<32).map { String(format: "%02x", UInt8(truncatingIfNeeded: Int($0) &* 7 &+ Int(seed))) }.joined()
    }

    /// A fresh temporary directory for one test.
    static func temporaryDirectory() throws -> URL { try makeTemporaryDirectory(prefix: "kkpush-backend") }
}

/// A minimal HTTP/1.1 client for the simulated backend (URLSession; loopback only).
enum HTTP {
    struct Response {
        var status: Int
        var body: Data
        /// The response headers, names lowercased.
        var headers: [String: String] = [:]
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    }

    static func request(
        _ method: String, _ url: String, bearer: String? = nil, json: Any? = nil, body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> Response {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.timeoutInterval = 60
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        var headers: [String: String] = [:]
        for (name, value) in (response as? HTTPURLResponse)?.allHeaderFields ?? [:] {
            headers["\(name)".lowercased()] = "\(value)"
        }
        return Response(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data, headers: headers)
    }
}

/// A ``PushSender`` that records what it was asked to send and answers from a table (accepted by default).
final class RecordingSender: PushSender, @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [(NotificationRequest, APNsEnvironment)] = []
    private let answers: [String: PushDelivery]

    init(answers: [String: PushDelivery] = [:]) { self.answers = answers }

    func send(_ request: NotificationRequest, to environment: APNsEnvironment) async -> PushDelivery {
        lock.withLock { sent.append((request, environment)) }
        return answers[request.deviceToken] ?? .accepted(apnsID: UUID().uuidString)
    }

    var requests: [(request: NotificationRequest, environment: APNsEnvironment)] {
        lock.withLock { sent.map { ($0.0, $0.1) } }
    }
}
