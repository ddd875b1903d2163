import Foundation
import Hummingbird

extension AudioGateServer {
    /// `POST /v1/sendspin/command`: a controller command for the Sendspin server.
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
    }
}
