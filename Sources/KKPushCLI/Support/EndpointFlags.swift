import ArgumentParser
import KKPushCore

/// The endpoint flags every sending command shares: `--url` (a stand-in for Apple's host) and `--ca-file`.
enum EndpointFlags {
    /// `--ca-file` only with `--url`, and `--url` a URL kkpush can connect to; usage errors naming the flag.
    static func check(url: String?, caFile: String?) throws {
        if caFile != nil, url == nil {
            throw ValidationError("--ca-file goes with --url (Apple's hosts use the system's CA store).")
        }
        if let url {
            do {
                _ = try APNsEndpoint.parse(url: url)
            } catch let error as KKPushError {
                throw ValidationError("--url: \(error.message) \(error.fix ?? "")")
            }
        }
    }
}
