internal import CCurl
import Foundation

/// The TCP sockets of the client's connections, corked while a turn of the loop runs libcurl and
/// flushed after it.
///
/// libcurl 7.x writes every HTTP/2 frame (and so every TLS record) with its own `send()`: two or
/// three per push. On a busy connection each of those becomes its own TCP segment, and on loopback or
/// a fast link the segments, not the bytes, are what cost (the peer is woken per segment, ACKs per
/// segment). With `TCP_CORK` set for the length of one `curl_multi_perform` the kernel coalesces what
/// that turn wrote into full segments; clearing it afterwards sends the rest at once, so nothing waits
/// longer than the turn that wrote it (microseconds), and idle connections are never corked.
///
/// libcurl reports sockets through `CURLOPT_SOCKOPTFUNCTION` (opened) and `CURLOPT_CLOSESOCKETFUNCTION`
/// (closed; the callback closes the descriptor itself). Loop thread only: libcurl calls both from
/// inside the multi calls the loop makes.
final class CorkedSockets {
    private var descriptors: [Int32] = []
    /// False once a socket refused `TCP_CORK` (a system without it): corking is then off for good.
    private var enabled = true
    private var corked = false

    /// The pointer libcurl hands back to the callbacks (unretained: the loop keeps this object alive
    /// for as long as the multi handle exists).
    var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Corks every connection before a turn that may write.
    func cork() {
        guard enabled, !descriptors.isEmpty else { return }
        // Marked first, so that `flush()` uncorks the sockets corked before one refused.
        corked = true
        for fd in descriptors where kk_tcp_cork(fd, 1) != 0 {
            enabled = false
            return
        }
    }

    /// Flushes what the turn wrote.
    func flush() {
        guard corked else { return }
        corked = false
        for fd in descriptors { _ = kk_tcp_cork(fd, 0) }
    }

    fileprivate func opened(_ fd: Int32) {
        if !descriptors.contains(fd) { descriptors.append(fd) }
    }

    fileprivate func closed(_ fd: Int32) {
        descriptors.removeAll { $0 == fd }
    }
}

let corkedSocketsOpened: kk_curl_sockopt_callback = { userdata, fd, purpose in
    if let userdata, purpose.rawValue == UInt32(kk_curl_socktype_ipcxn()) {
        Unmanaged<CorkedSockets>.fromOpaque(userdata).takeUnretainedValue().opened(fd)
    }
    return kk_curl_sockopt_ok()
}

let corkedSocketsClosed: kk_curl_closesocket_callback = { userdata, fd in
    if let userdata { Unmanaged<CorkedSockets>.fromOpaque(userdata).takeUnretainedValue().closed(fd) }
    return kk_close(fd)
}
