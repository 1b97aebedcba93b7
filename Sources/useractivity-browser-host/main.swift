// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

exit(BrowserHostCommand.main(arguments: CommandLine.arguments))
