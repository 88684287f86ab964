import ArgumentParser
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore

/// `kkpush version`: kkpush's version and the libcurl, nghttp2 and OpenSSL it runs against.
struct VersionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print kkpush's version and the libcurl (with nghttp2) and OpenSSL it runs against.",
        discussion: "Exits 1 if the libcurl loaded at run time has no HTTP/2 or no TLS: APNs needs both."
    )

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    func run() async throws {
        let curl = LibcurlInfo.current
        let ssl = OpenSSLInfo.current
        if json {
            Output.printJSON([
                "kkpush": .string(KKPushVersion.string),
                "libcurl": .string(curl.version),
                "libcurl_ssl": JSONValue(curl.sslVersion),
                "nghttp2": JSONValue(curl.nghttp2Version),
                "http2": .bool(curl.hasHTTP2),
                "openssl": .string(ssl.versionText),
            ])
        } else {
            print("kkpush \(KKPushVersion.string)")
            let tls = curl.sslVersion ?? "no TLS"
            let h2 = curl.nghttp2Version.map { "nghttp2/\($0)" } ?? "no nghttp2"
            print("libcurl \(curl.version) (\(tls), \(h2), HTTP/2: \(curl.hasHTTP2 ? "yes" : "no"))")
            print(ssl.versionText)
        }
        do {
            try curl.requireAPNsSupport()
        } catch {
            // On stderr as text even under --json: stdout already holds the version document.
            throw ExitCode(ErrorReport.report(error, json: false) ?? ExitStatus.failed)
        }
    }
}
