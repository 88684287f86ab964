import Foundation
import KKPushCore

/// A JSON POST to a webhook (gorush's feedback hook: a token found dead), through one libcurl easy transfer on a
/// thread of its own, with a timeout per attempt and a bounded number of attempts. Never throws: a failure is
/// the answer (`error`), for the caller to report.
package enum WebhookPost {
    /// What came of one POST.
    package struct Answer: Sendable, Equatable {
        /// The last HTTP status, if an answer came.
        package var status: Int?
        /// Why it did not succeed (transport failure or a status other than 2xx), nil on success.
        package var error: String?
        /// How many attempts were made.
        package var attempts: Int

        /// True for a 2xx answer.
        package var delivered: Bool { error == nil }
    }

    /// The settings of every POST.
    package struct Settings: Sendable {
        /// The webhook's URL (http:// or https://).
        package var url: String
        /// The timeout of one attempt (connecting included).
        package var timeout: Duration
        /// At most this many attempts (1: no retry). A transport failure, 408, 429 and 5xx are retried.
        package var attempts: Int
        /// The wait before the second attempt, doubled before each later one.
        package var backoff: Duration
        /// A CA file for an https webhook with a private CA.
        package var caFile: String?

        package init(
            url: String, timeout: Duration = .seconds(5), attempts: Int = 3, backoff: Duration = .milliseconds(200),
            caFile: String? = nil
        ) {
            self.url = url
            self.timeout = timeout
            self.attempts = attempts
            self.backoff = backoff
            self.caFile = caFile
        }
    }

    /// POSTs `body` (JSON) with up to `settings.attempts` attempts.
    package static func post(_ body: [UInt8], settings: Settings) async -> Answer {
        guard Libcurl.globalInit() else { return Answer(status: nil, error: "curl_global_init failed", attempts: 0) }
        let attempts = max(1, settings.attempts)
        var answer = Answer(status: nil, error: "not sent", attempts: 0)
        var wait = settings.backoff
        for attempt in 1...attempts {
            if attempt > 1 {
                try? await Task.sleep(for: wait)
                wait = wait * 2
            }
            answer.attempts = attempt
            let ms = max(
                1,
                Int(
                    settings.timeout.components.seconds * 1000 + settings.timeout.components.attoseconds
                        / 1_000_000_000_000_000))
            let exchange = EasyExchange.Settings(
                method: "POST", url: settings.url,
                headerLines: ["Content-Type: application/json", "Accept:", "Expect:"],
                body: body, caFile: settings.caFile, connectTimeoutMS: ms, timeoutMS: ms, proxy: nil,
                credential: .none)
            let result: Result<EasyExchange.Raw, any Error> = await withCheckedContinuation { continuation in
                let thread = Thread { continuation.resume(returning: Result { try EasyExchange.run(exchange) }) }
                thread.name = "kkpush-webhook"
                thread.start()
            }
            switch result {
            case .success(let raw):
                answer.status = raw.status
                if (200..<300).contains(raw.status) {
                    answer.error = nil
                    return answer
                }
                answer.error = "HTTP \(raw.status)"
                if !(raw.status == 408 || raw.status == 429 || raw.status >= 500) { return answer }
            case .failure(let error):
                answer.status = nil
                answer.error = (error as? KKPushError)?.message ?? ErrorWords.describe(error)
            }
        }
        return answer
    }
}
