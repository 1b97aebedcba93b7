// SPDX-License-Identifier: Apache-2.0
#include <stddef.h>
/// Bytes malloc has handed out and not had back, mmapped blocks included
/// (glibc serves large arrays, such as a search index's, by mmap).
size_t heap_in_use(void);
