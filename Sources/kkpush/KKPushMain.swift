import KKPushCLI

/// The `kkpush` executable: every command lives in `KKPushCLI`.
@main
struct KKPushMain {
    static func main() async {
        await KKPushCommand.main()
    }
}
