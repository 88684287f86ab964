import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushSystem

/// `--apns-file FILE` of `send` and `payload build`: the push written as an Xcode Simulator `.apns` file
/// (``SimulatorPushFile``), for `xcrun simctl push booted FILE` or a drop on a Simulator window.
enum SimulatorFileWriter {
    /// The flag's help.
    static let help =
        "Also write the push as an Xcode Simulator .apns file (Simulator Target Bundle + the payload exactly as sent; for xcrun simctl push)."

    /// Writes the `.apns` file of `payload` sent to `topic` to `path` atomically; returns the warnings to print.
    static func write(payload: [UInt8], topic: String, pushType: PushType?, to path: String) throws -> [Problem] {
        let written = try SimulatorPushFile.make(payload: payload, topic: topic, pushType: pushType)
        do {
            try AtomicFile.write(written.bytes + [0x0A], to: path)
        } catch {
            throw KKPushError(
                code: .outputNotWritable,
                message: "--apns-file \(path) could not be written: \(ErrorWords.systemText(errno: error.errno)).",
                fix: "Give --apns-file a path in a writable folder.")
        }
        return written.problems
    }
}
