// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing

@Suite struct LinkPrivacyTests {
    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = HMACSHA256.mac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aTokenResolvesOnlyWithItsKeyAndNeverRepeats() {
        let key = SecureRandom.bytes(32)
        let other = SecureRandom.bytes(32)
        let tokens = (0..<50).map { _ in ResolvableToken.make(resolvingKey: key) }
        #expect(Set(tokens).count == tokens.count)
        for token in tokens {
            #expect(token.utf8.count == ResolvableToken.length)
            #expect(ResolvableToken.resolves(token, with: key))
            #expect(!ResolvableToken.resolves(token, with: other))
        }
        #expect(ResolvableToken.resolve(tokens[0], candidates: [("a", other), ("b", key)]) == "b")
        #expect(ResolvableToken.resolve(tokens[0], candidates: [("a", other)]) == nil)
    }

    @Test func aTamperedOrMalformedTokenDoesNotResolve() {
        let key = SecureRandom.bytes(32)
        let token = ResolvableToken.make(resolvingKey: key, nonce: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(ResolvableToken.make(resolvingKey: key, nonce: [1, 2, 3, 4, 5, 6, 7, 8]) == token)
        var flipped = Array(token)
        flipped[0] = flipped[0] == "0" ? "1" : "0"
        #expect(!ResolvableToken.resolves(String(flipped), with: key))
        #expect(!ResolvableToken.resolves(String(token.dropLast()), with: key))
        #expect(!ResolvableToken.resolves(token.uppercased(), with: key))
        #expect(!ResolvableToken.resolves(token, with: []))
    }

    @Test func bothEndsDeriveTheSameLinkSecretOnlyFromTheSameSession() {
        let a = SHA256.hash([1]), b = SHA256.hash([2])
        let binding = SecureRandom.bytes(32)
        let onA = LinkProof.linkSecret(channelBinding: binding, localKeyID: a, remoteKeyID: b)
        #expect(onA == LinkProof.linkSecret(channelBinding: binding, localKeyID: b, remoteKeyID: a))
        #expect(onA.count == LinkProof.secretBytes)
        #expect(onA != LinkProof.linkSecret(channelBinding: SecureRandom.bytes(32), localKeyID: a, remoteKeyID: b))
    }

    @Test func theServerFindsThePairAndTheClientChecksTheAnswer() {
        let secrets = (0..<5).map { _ in SecureRandom.bytes(32) }
        let candidates = secrets.enumerated().map { (id: "device\($0.offset)", linkSecret: $0.element) }
        let binding = SecureRandom.bytes(32)
        let proof = LinkProof.client(linkSecret: secrets[3], channelBinding: binding)
        #expect(LinkProof.identifyClient(proof: proof, channelBinding: binding, candidates: candidates) == "device3")
        let answer = LinkProof.server(linkSecret: secrets[3], channelBinding: binding)
        #expect(answer != proof)
        #expect(LinkProof.verifyServer(proof: answer, linkSecret: secrets[3], channelBinding: binding))
        #expect(!LinkProof.verifyServer(proof: answer, linkSecret: secrets[2], channelBinding: binding))
        // The client's own proof sent back is not the server's answer.
        #expect(!LinkProof.verifyServer(proof: proof, linkSecret: secrets[3], channelBinding: binding))
    }

    @Test func aProofReplayedOnAnotherSessionOrFromAStrangerIdentifiesNobody() {
        let secret = SecureRandom.bytes(32)
        let candidates = [(id: "paired", linkSecret: secret)]
        let proof = LinkProof.client(linkSecret: secret, channelBinding: SecureRandom.bytes(32))
        #expect(LinkProof.identifyClient(proof: proof, channelBinding: SecureRandom.bytes(32), candidates: candidates) == nil)
        let stranger = LinkProof.client(linkSecret: SecureRandom.bytes(32), channelBinding: SecureRandom.bytes(32))
        #expect(LinkProof.identifyClient(proof: stranger, channelBinding: SecureRandom.bytes(32), candidates: candidates) == nil)
        #expect(LinkProof.identifyClient(proof: [], channelBinding: SecureRandom.bytes(32), candidates: candidates) == nil)
        #expect(LinkProof.identifyClient(proof: proof, channelBinding: [], candidates: candidates) == nil)
        // A device paired before secrets were exchanged has none to try.
        #expect(LinkProof.identifyClient(proof: proof, channelBinding: SecureRandom.bytes(32), candidates: [(id: "old", linkSecret: [])]) == nil)
    }

    @Test func rotationIsDueAnIntervalAfterTheLast() {
        var rotation = PrivacyRotation()
        #expect(!rotation.isDue(now: .max - 1))
        rotation.rotated(now: 1_000_000)
        #expect(!rotation.isDue(now: 1_000_000 + PrivacyRotation.intervalSeconds * 1_000_000 - 1))
        #expect(rotation.isDue(now: 1_000_000 + PrivacyRotation.intervalSeconds * 1_000_000))
        rotation.stop()
        #expect(!rotation.isDue(now: .max - 1))
    }

    @Test func proofFramesAreAllowedBeforePairingAndFitTheSmallLimit() {
        #expect(FrameKind.proof.isPairing && FrameKind.proofAccepted.isPairing && !FrameKind.pairKeys.isPairing)
        let frame = Frame(.proof, ["mac": .bytes(SecureRandom.bytes(32))])
        let bytes = FrameCodec.encode(frame, limit: FrameCodec.proofLimit)
        #expect(bytes != nil)
        var reader = FrameReader(limit: FrameCodec.proofLimit)
        reader.append(bytes ?? [])
        #expect((try? reader.next())?.bytes("mac") == frame.bytes("mac"))
    }
}
