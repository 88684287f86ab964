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
        let report = VersionReport.current(kkpush: KKPushVersion.string)
        Output.printReport(report, json: json)
        do {
            try report.libcurl.requireAPNsSupport()
        } catch {
            // On stderr as text even under --json: stdout already holds the version document.
            throw ExitCode(ErrorReport.report(error, json: false) ?? ExitStatus.failed)
        }
    }
}

extension VersionReport: CommandReport {
    var textLines: [String] {
        let tls = libcurl.sslVersion ?? "no TLS"
        let h2 = libcurl.nghttp2Version.map { "nghttp2/\($0)" } ?? "no nghttp2"
        return [
            "kkpush \(kkpush)",
            "libcurl \(libcurl.version) (\(tls), \(h2), HTTP/2: \(libcurl.hasHTTP2 ? "yes" : "no"))",
            openssl.versionText,
        ]
    }
}
