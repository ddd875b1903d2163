import NIOCore

/// Socket settings shared by the capture routes.
enum CaptureConnection {
    /// Send buffer of a capture connection: small, so a stalled reader fills its own bounded queue
    /// (and gets `overrun`) instead of megabytes of kernel buffer hiding it for minutes.
    static let sendBufferBytes = 64 * 1024

    /// Shrinks the socket send buffer; a failure only loses the early overrun signal.
    static func limitSendBuffer(_ channel: any Channel) async {
        try? await channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: sendBufferBytes).get()
    }
}
