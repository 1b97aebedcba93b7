// SPDX-License-Identifier: Apache-2.0
// Stored blobs → TypedValueCodec.decode: raw bytes, and damaged valid encodings.
import FuzzDriver
import FuzzGenerators
import TypedValues

FuzzDriver.run { bytes in
    var input = FuzzInput(bytes: bytes)
    return ParserProperties.checkDecode(bytes) + ParserProperties.checkDecode(ParserProperties.damagedEncoding(&input))
}
