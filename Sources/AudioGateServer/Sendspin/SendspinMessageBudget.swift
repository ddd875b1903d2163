/// How many messages a server may send: a token bucket that holds a start-up burst (a server sends
/// its buffer's lead at once) and refills at many times what playing needs (tens of chunks and
/// time answers a second). A server past it is flooding and its connection is closed, so its
/// decrypting never takes a whole event-loop thread from everyone else.
struct SendspinMessageBudget {
    /// Messages that may arrive back to back.
    static let burst = 4000.0
    /// Messages a second, sustained.
    static let perSecond = 2000.0
    /// Messages handled before the reader lets other tasks on its thread run.
    static let yieldEvery = 16

    private var tokens = Self.burst
    private var last: UInt64?
    private var sinceYield = 0

    /// Takes one message arriving at `now` (CLOCK_MONOTONIC ns); throws once the server floods.
    /// Returns whether the reader should yield before the next.
    mutating func take(now: UInt64) throws(SendspinError) -> Bool {
        if let last, now > last { tokens = min(Self.burst, tokens + Double(now - last) / 1e9 * Self.perSecond) }
        last = now
        guard tokens >= 1 else {
            throw SendspinError(.flood, "over \(Int(Self.perSecond)) messages a second (a start-up burst of \(Int(Self.burst)))")
        }
        tokens -= 1
        sinceYield += 1
        guard sinceYield >= Self.yieldEvery else { return false }
        sinceYield = 0
        return true
    }
}
