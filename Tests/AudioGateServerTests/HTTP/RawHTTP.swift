import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A TCP connection to the server that writes requests byte for byte as given (no client
/// normalises the path or adds an `Expect`) and reads answers as they arrive.
final class RawHTTP {
    struct Answer {
        var status: Int
        /// What arrived of the response after the status line (headers and the first body bytes).
        var rest: String
    }

    private let fd: Int32
    private var received: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit {
        close(fd)
    }

    func write(_ bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw POSIXError(.EPIPE)
        }
    }

    /// Writes a request head: the request line, Host, then `headers`.
    func writeHead(method: String, target: String, port: Int, headers: [String]) throws {
        let lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)"] + headers
        try write((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// The next response head (status line and headers), nil when the connection ended or timed out first.
    func readHead() -> Answer? {
        let end = Array("\r\n\r\n".utf8)
        while received.firstRange(of: end) == nil {
            guard fill() else { return nil }
        }
        let range = received.firstRange(of: end)!
        let head = String(decoding: received[..<range.upperBound], as: UTF8.self)
        received.removeSubrange(..<range.upperBound)
        let status = head.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return Answer(status: status, rest: String(head.drop { $0 != "\n" }))
    }

    /// Reads until at least `count` body bytes arrived or the connection ended; returns them.
    func readBody(atLeast count: Int) -> String {
        while received.count < count, fill() {}
        defer { received.removeAll() }
        return String(decoding: received, as: UTF8.self)
    }

    private func fill() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        received += buffer[0..<count]
        return true
    }

    /// One request with an empty body on a connection of its own: the status and the start of the
    /// answer (enough of the body to tell a route's 404 from the policy's). The connection closes
    /// after the first bytes, so a streaming route answers as fast as any other.
    static func send(port: Int, method: String, target: String, headers: [String] = []) throws -> Answer {
        let connection = try RawHTTP(port: port)
        // Closed after the answer, so an answer without a body ends the read at once.
        let close = headers.contains { $0.lowercased().hasPrefix("connection:") } ? [] : ["Connection: close"]
        try connection.writeHead(method: method, target: target, port: port, headers: ["Content-Length: 0"] + close + headers)
        guard var answer = connection.readHead() else { return Answer(status: 0, rest: "") }
        if answer.status != 101, answer.status != 204 { answer.rest += connection.readBody(atLeast: 64) }
        return answer
    }
}
