// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

exit(HandoffCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
