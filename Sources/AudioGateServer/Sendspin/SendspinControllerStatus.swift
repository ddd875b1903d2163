/// The controller's view in `/v1/status` (`sendspin.controller`).
struct SendspinControllerStatus: Encodable, Equatable {
    /// The commands the server takes now.
    var supportedCommands: [String]
    /// The group's volume 0-100 and mute.
    var volume: Int
    var muted: Bool
    var `repeat`: String?
    var shuffle: Bool?

    init(_ controller: SendspinServerState.Controller) {
        supportedCommands = controller.supportedCommands.prefix(32).map { String($0.prefix(32)) }
        volume = controller.volume
        muted = controller.muted
        `repeat` = controller.repeatMode.map { String($0.prefix(32)) }
        shuffle = controller.shuffle
    }
}
