import Hummingbird
import NIOCore

extension AudioGateServer {
    func addMetricsRoutes(to router: Router<AudioGateRequestContext>) {
        router.on(RouteTable.metrics) { _, _ in
            metrics.refresh(from: [engine.capture.monitor.snapshot, engine.playback.monitor.snapshot])
            recordings.refreshMetrics()
            refreshSnapcastMetrics()
            refreshSendspinMetrics()
            var buffer: [UInt8] = []
            buffer.reserveCapacity(8192)
            metrics.registry.emit(into: &buffer)
            engine.captureHub.metrics.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }
}
