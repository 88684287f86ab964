import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushSimulateCommand

/// The `kkpush-simulate` executable: `kkpush simulate` alone (see ``KKPushSimulateRoot``).
@main
struct KKPushSimulateMain {
    static func main() async {
        // Before anything uses OpenSSL: threads still ending while `exit` runs may free keys (see the function).
        OpenSSLExit.keepStateUntilExit()
        let status = await KKPushSimulateRoot.run(Array(CommandLine.arguments.dropFirst()), io: .process)
        Foundation.exit(status)
    }
}
