public import Foundation

/// The repository the tests run in, found from this file's path (`Tests/KKPushTestSupport/`), so
/// every test target finds the committed fixtures the same way, whatever the working directory.
public enum Repository {
    /// The repository root.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Certificates/`: the committed test keys, certificates and `keys.json`.
    public static let certificates: URL = root.appendingPathComponent("Certificates")

    /// The path of `name` in `Certificates/`.
    public static func certificate(_ name: String) -> String {
        certificates.appendingPathComponent(name).path
    }

    /// The URL of `relativePath` under the repository root (`"Tests/KKPushCoreTests/.fixtures/cta.json"`).
    public static func file(_ relativePath: String) -> URL { root.appendingPathComponent(relativePath) }

    /// The bytes of `relativePath` under the repository root.
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(relativePath)))
    }

    /// An executable SwiftPM built with the tests (`kkpush`, `kkpush-example`, `generate-manual`): the one way a
    /// test finds a built binary. It looks beside the test bundle (the build folder SwiftPM runs the tests from), then
    /// in `.build/debug/`; for `kkpush`, `$KKPUSH_BINARY` comes first (`.ci/smoke-release` runs the "true answers"
    /// suites against the release build that way). A missing binary throws, so the test fails: it is never skipped.
    public static func builtProduct(_ name: String) throws -> URL {
        let fm = FileManager.default
        if name == "kkpush", let override = ProcessInfo.processInfo.environment["KKPUSH_BINARY"], !override.isEmpty {
            let url = URL(fileURLWithPath: override, relativeTo: root).standardizedFileURL
            guard fm.isExecutableFile(atPath: url.path) else { throw BuiltProductMissing(name: name, looked: [url]) }
            return url
        }
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        folders.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let arg0 = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: arg0).deletingLastPathComponent())
        }
        folders.append(root.appendingPathComponent(".build/debug"))
        var looked: [URL] = []
        for folder in folders {
            // The bundle's executable sits a few levels below the products folder (…/debug/X.xctest/…).
            var candidate = folder
            for _ in 0..<4 {
                let url = candidate.appendingPathComponent(name)
                looked.append(url)
                var isFolder: ObjCBool = false
                if fm.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue,
                    fm.isExecutableFile(atPath: url.path)
                {
                    return url.standardizedFileURL
                }
                candidate = candidate.deletingLastPathComponent()
            }
        }
        throw BuiltProductMissing(name: name, looked: looked)
    }
}

/// A test needs a binary the build did not make.
public struct BuiltProductMissing: Error, CustomStringConvertible {
    public var name: String
    public var looked: [URL]
    public var description: String {
        "The test needs the built executable '\(name)', which is not there (looked in "
            + "\(Set(looked.map { $0.deletingLastPathComponent().path }).sorted().joined(separator: ", "))). "
            + "Build it: swift build -debug-info-format none --product \(name) (bash .ci/test builds everything it needs)."
    }
}
