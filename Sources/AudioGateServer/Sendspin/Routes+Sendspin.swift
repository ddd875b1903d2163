import Foundation
import Hummingbird

extension AudioGateServer {
    /// `POST /v1/sendspin/command`: a controller command for the Sendspin server; `POST
    /// /v1/sendspin/pairing`: the operator's gesture that opens the static pairing code's window.
    func addSendspinRoutes(to router: Router<AudioGateRequestContext>) {
        let player = sendspin
        router.on(RouteTable.sendspinCommand) { request, _ in
            guard let player else {
                throw SendspinCommandError(.notFound, "the Sendspin player is off: start the server with --sendspin-server")
            }
            let body = try await request.body.collect(upTo: SendspinCommand.maximumBodyBytes)
            let command = try SendspinCommand.parse(Data(buffer: body))
            try player.send(command)
            return try JSONResponse.make(command)
        }
        router.on(RouteTable.sendspinPairing) { _, _ in
            guard let player else {
                throw SendspinCommandError(.notFound, "the Sendspin player is off: start the server with --sendspin-server or --sendspin-port")
            }
            guard player.configuration.staticPairingCode != nil else {
                throw SendspinCommandError(
                    .conflict, "the player has no static pairing code: start it with --sendspin-pairing-code (or pair with the token of audiogate sendspin-token)")
            }
            player.pairingWindow.open()
            player.logger.info("sendspin: pairing window open for \(SendspinPairingWindow.lifetimeNanoseconds / 1_000_000_000) s")
            return try JSONResponse.make(player.pairingWindow.status)
        }
    }
}
