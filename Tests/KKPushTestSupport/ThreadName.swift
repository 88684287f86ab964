import Foundation

/// The calling thread's name as the kernel has it (what `top -H`, `perf` and /proc show).
package func kernelThreadName() throws -> String {
    try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
}
