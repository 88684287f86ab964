import Foundation

/// The fuzz binary's entry point.
///
/// Built for fuzzing (`.ci/fuzz`: `-sanitize=fuzzer -DKKPUSH_FUZZING`), `main` hands over to libFuzzer's
/// driver with the target named by `KKPUSH_FUZZ_TARGET`; every libFuzzer flag works as usual
/// (`KKPUSH_FUZZ_TARGET=json KKPushFuzz -max_total_time=60 corpus/`, or a crash file to reproduce it).
/// (SwiftPM links an executable with `main` aliased to this module's entry point, so libFuzzer's own
/// `main` is not used: `LLVMFuzzerRunDriver` is libFuzzer's documented way in.)
///
/// In a normal build it replays inputs: `KKPushFuzz [--target NAME] FILE_OR_DIRECTORY...` runs each file
/// through its target (named by `--target`, else by the directory the file is in, as in
/// `Tests/Fuzz/Corpus/<target>/`), so a crash file can be debugged in a debug build and the seeds are
/// checked without instrumentation; `--mutate --target NAME SEEDS...` runs seeded mutations of them without coverage
/// feedback (``Mutation``, the slice CI runs on the debug build). In both builds: `--list` prints `name max_len summary` per target;
/// `--write-seeds DIR` writes the seeds that need a signature (provider tokens, device JWTs, backend
/// requests) into `DIR/<target>/`.
@main
struct FuzzMain {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--list" {
            for target in FuzzTargets.all {
                print("\(target.name) \(target.maxLength) \(target.summary)")
            }
            return
        }
        if arguments.first == "--write-seeds", arguments.count == 2 {
            do {
                let count = try GeneratedSeeds.write(to: arguments[1])
                print("wrote \(count) generated seeds under \(arguments[1])")
            } catch {
                FileHandle.standardError.write(Data("KKPushFuzz: \(error)\n".utf8))
                exit(1)
            }
            return
        }
        if arguments.first == "--mutate" {
            exit(Mutation.run(Array(arguments.dropFirst())))
        }
        #if KKPUSH_FUZZING
            runLibFuzzer()
        #else
            exit(Replay.run(arguments))
        #endif
    }
}

#if KKPUSH_FUZZING
    typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// libFuzzer's driver (compiler-rt's FuzzerDriver.cpp), linked in by `-sanitize=fuzzer`.
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: FuzzCallback
    ) -> CInt

    /// The target libFuzzer drives; set once before the driver starts, read by the callback only.
    nonisolated(unsafe) var selectedTarget: FuzzTarget?

    /// The symbol libFuzzer's own `main` (compiler-rt's FuzzerMain.cpp) calls. A debug link (`.ci/fuzz --debug`)
    /// pulls that object in although the executable's `main` is this module's (SwiftPM's `--defsym`), and it must
    /// resolve; the driver itself is started by `runLibFuzzer()` with its own callback, so this only runs the
    /// selected target the same way.
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        selectedTarget?.run(bytes)
        return 0
    }

    func runLibFuzzer() -> Never {
        let name = ProcessInfo.processInfo.environment["KKPUSH_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTargets.named(name) else {
            let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
            FileHandle.standardError.write(
                Data("KKPushFuzz: set KKPUSH_FUZZ_TARGET to one of: \(names) (got '\(name)')\n".utf8))
            exit(2)
        }
        selectedTarget = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
                selectedTarget!.run(bytes)
                return 0
            })
    }
#endif

/// Replays files through their targets (the normal build's entry point).
enum Replay {
    static func run(_ arguments: [String]) -> Int32 {
        var targetName: String?
        var paths: [String] = []
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--target", index + 1 < arguments.count {
                targetName = arguments[index + 1]
                index += 2
                continue
            }
            paths.append(arguments[index])
            index += 1
        }
        guard !paths.isEmpty else {
            print(
                "usage: KKPushFuzz [--target NAME] FILE_OR_DIRECTORY...  |  --mutate --target NAME [--seconds S] "
                    + "[--runs N] [--seed X] [--crash-file F] SEEDS...  |  --list  |  --write-seeds DIR")
            print("targets: " + FuzzTargets.all.map(\.name).joined(separator: ", "))
            return 2
        }
        var replayed: [String: Int] = [:]
        for path in paths {
            for file in files(at: path) {
                let name = targetName ?? URL(fileURLWithPath: file).deletingLastPathComponent().lastPathComponent
                guard let target = FuzzTargets.named(name) else {
                    FileHandle.standardError.write(Data("KKPushFuzz: no target '\(name)' for \(file)\n".utf8))
                    return 2
                }
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("KKPushFuzz: cannot read \(file)\n".utf8))
                    return 2
                }
                target.run(Array(data))
                replayed[name, default: 0] += 1
            }
        }
        for (name, count) in replayed.sorted(by: { $0.key < $1.key }) {
            print("\(name): \(count) input\(count == 1 ? "" : "s") replayed, no crash")
        }
        return 0
    }

    /// `path` itself if it is a file, else the regular files under it (sorted, hidden ones skipped).
    static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [path] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }.filter { file in
            var isDir: ObjCBool = false
            return !URL(fileURLWithPath: file).lastPathComponent.hasPrefix(".")
                && FileManager.default.fileExists(atPath: file, isDirectory: &isDir) && !isDir.boolValue
        }
    }
}
